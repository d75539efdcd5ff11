// Drives django-mqlite's SQS endpoint with the AWS SDK for JavaScript v3, which checks
// MD5OfBody on every received message. Usage: node sqs_test.mjs <endpoint> <key> <secret>
import {
  SQSClient,
  CreateQueueCommand,
  SendMessageCommand,
  SendMessageBatchCommand,
  ReceiveMessageCommand,
  DeleteMessageCommand,
  GetQueueAttributesCommand,
} from "@aws-sdk/client-sqs";

const [endpoint, accessKeyId, secretAccessKey] = process.argv.slice(2);
const client = new SQSClient({
  endpoint,
  region: "us-east-1",
  credentials: { accessKeyId, secretAccessKey },
  maxAttempts: 1,
});

function check(condition, what) {
  if (!condition) throw new Error(`check failed: ${what}`);
}

const { QueueUrl } = await client.send(new CreateQueueCommand({ QueueName: "js-orders" }));
check(QueueUrl.endsWith("/sqs/000000000000/js-orders"), `QueueUrl ${QueueUrl}`);
const sent = await client.send(
  new SendMessageCommand({
    QueueUrl,
    MessageBody: "hello from node ✓",
    MessageAttributes: { tenant: { DataType: "String", StringValue: "acme" } },
  }),
);
check(sent.MessageId, "MessageId");
await client.send(
  new SendMessageBatchCommand({
    QueueUrl,
    Entries: [
      { Id: "a", MessageBody: "batch a" },
      { Id: "b", MessageBody: "batch b" },
    ],
  }),
);
const seen = [];
for (let i = 0; i < 5 && seen.length < 3; i++) {
  const got = await client.send(
    new ReceiveMessageCommand({
      QueueUrl,
      MaxNumberOfMessages: 10,
      WaitTimeSeconds: 1,
      MessageAttributeNames: ["All"],
    }),
  );
  for (const m of got.Messages ?? []) {
    seen.push(m.Body);
    await client.send(new DeleteMessageCommand({ QueueUrl, ReceiptHandle: m.ReceiptHandle }));
  }
}
check(seen.sort().join("|") === "batch a|batch b|hello from node ✓", `bodies ${seen}`);
const attrs = await client.send(
  new GetQueueAttributesCommand({ QueueUrl, AttributeNames: ["All"] }),
);
check(attrs.Attributes.ApproximateNumberOfMessages === "0", "queue drained");
try {
  await client.send(new ReceiveMessageCommand({ QueueUrl: QueueUrl + "-missing" }));
  check(false, "missing queue raised");
} catch (err) {
  check(err.name === "QueueDoesNotExist", `error name ${err.name}`);
}
console.log("ok");
