"""Routes of the HTTP API: ``path("mq/", include("django_mqlite.api.urls"))``."""

from __future__ import annotations

from django.db import transaction
from django.urls import path, re_path

from .views import history, ops, queues, topics
from .views import messages as m

app_name = "mqlite-api"

urlpatterns = [
    path("queues/", queues.QueueListView.as_view(), name="queues"),
    path("queues/<str:name>/", queues.QueueDetailView.as_view(), name="queue"),
    path("queues/<str:name>/stats/", queues.QueueStatsView.as_view(), name="queue-stats"),
    path("queues/<str:name>/history/", history.QueueHistoryView.as_view(), name="queue-history"),
    path("queues/<str:name>/pause/", queues.QueuePauseView.as_view(), name="queue-pause"),
    path("queues/<str:name>/resume/", queues.QueueResumeView.as_view(), name="queue-resume"),
    path("queues/<str:name>/messages/", m.MessagesView.as_view(), name="messages"),
    path("queues/<str:name>/messages/<int:seq>/", m.MessageView.as_view(), name="message"),
    path(
        "queues/<str:name>/messages/<int:seq>/complete/", m.CompleteView.as_view(), name="complete"
    ),
    path("queues/<str:name>/messages/<int:seq>/abandon/", m.AbandonView.as_view(), name="abandon"),
    path("queues/<str:name>/messages/<int:seq>/snooze/", m.SnoozeView.as_view(), name="snooze"),
    path("queues/<str:name>/messages/<int:seq>/reject/", m.RejectView.as_view(), name="reject"),
    path("queues/<str:name>/messages/<int:seq>/defer/", m.DeferView.as_view(), name="defer"),
    path("queues/<str:name>/messages/<int:seq>/renew/", m.RenewView.as_view(), name="renew"),
    path("queues/<str:name>/messages/<int:seq>/cancel/", m.CancelView.as_view(), name="cancel"),
    # A long-poll must not hold a transaction open, even under ATOMIC_REQUESTS.
    path(
        "queues/<str:name>/receive/",
        transaction.non_atomic_requests(m.ReceiveView.as_view()),
        name="receive",
    ),
    path(
        "queues/<str:name>/receive-deferred/",
        m.ReceiveDeferredView.as_view(),
        name="receive-deferred",
    ),
    path("queues/<str:name>/complete/", m.CompleteBatchView.as_view(), name="complete-batch"),
    path("queues/<str:name>/renew/", m.RenewBatchView.as_view(), name="renew-batch"),
    path("queues/<str:name>/redrive/", ops.RedriveView.as_view(), name="redrive"),
    path("queues/<str:name>/purge/", ops.PurgeView.as_view(), name="purge"),
    path("topics/", topics.TopicListView.as_view(), name="topics"),
    path("topics/<str:topic>/", topics.TopicDetailView.as_view(), name="topic"),
    path("topics/<str:topic>/publish/", topics.PublishView.as_view(), name="publish"),
    path(
        "topics/<str:topic>/subscriptions/<str:name>/",
        topics.SubscriptionView.as_view(),
        name="subscription",
    ),
    path("stats/", queues.StatsView.as_view(), name="stats"),
    path("metrics/", ops.MetricsView.as_view(), name="metrics"),
    path("healthz/", ops.HealthView.as_view(), name="healthz"),
    path("schema/", ops.SchemaView.as_view(), name="schema"),
    re_path(r"^.*$", ops.NotFoundView.as_view(), name="not-found"),
]
