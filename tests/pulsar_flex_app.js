// A small app on pulsar-flex (npm: a Pulsar client in plain JavaScript, its own protocol code) against
// `pulsarlab serve`: produce, Shared and Exclusive consume with acks, and a negative ack redelivered.
// Run by tests/serve/test_serve_pulsar_flex.py: node pulsar_flex_app.js HOST:PORT TOPIC_PREFIX N
// Prints one JSON line: what each consumer received ({payload, redeliveryCount, consumer}) in order, then stays
// connected until its stdin closes.
const { Producer, Consumer, logLevel } = require('pulsar-flex');

const [server, prefix, countText] = process.argv.slice(2);
const n = Number(countText);
const topic = `persistent://public/default/${prefix}`;
const quiet = { logLevel: logLevel.NOTHING, logCreator: () => () => {} };

function consumer(subscription, subType, name) {
  return new Consumer({
    topic,
    subscription,
    subType,
    consumerName: name,
    discoveryServers: [server],
    receiveQueueSize: subType === Consumer.SUB_TYPES.SHARED ? 4 : 100,
    ...quiet,
  });
}

// resolves once `done(received)` says so; each message goes through `handle` (which acks or nacks it)
function consume(c, handle, done) {
  const received = [];
  return new Promise((resolve, reject) => {
    c.run({
      autoAck: false,
      onMessage: async ({ message, redeliveryCount, ack }) => {
        const entry = { payload: message.toString(), redeliveryCount, consumer: c._consumerName };
        received.push(entry);
        await handle(entry, ack);
        if (done(received)) resolve(received);
      },
    }).catch(reject);
  });
}

async function main() {
  const shared = [consumer('shared', Consumer.SUB_TYPES.SHARED, 's1'), consumer('shared', Consumer.SUB_TYPES.SHARED, 's2')];
  const exclusive = consumer('exclusive', Consumer.SUB_TYPES.EXCLUSIVE, 'x1');
  const redo = consumer('redo', Consumer.SUB_TYPES.SHARED, 'r1');
  for (const c of [...shared, exclusive, redo]) await c.subscribe();

  const producer = new Producer({ topic, discoveryServers: [server], producerAccessMode: Producer.ACCESS_MODES.SHARED, ...quiet });
  await producer.create();
  for (let i = 0; i < n; i++) await producer.sendMessage({ payload: `m${i}`, properties: { i: String(i) } });

  // both Shared consumers run at once; the messages are spread over them, each acknowledged
  const sharedAll = [];
  const sharedDone = new Promise((resolve, reject) => {
    for (const c of shared) {
      consume(c, async (e, ack) => { sharedAll.push(e); await ack(); }, () => sharedAll.length >= n)
        .then(resolve, reject);
    }
  });
  const exclusiveGot = await consume(exclusive, async (_e, ack) => ack(), (r) => r.length >= n);
  // redelivery: the first delivery of m0 is negatively acknowledged, everything else acknowledged
  let nacked = false;
  const redoGot = await consume(
    redo,
    async (e, ack) => {
      if (e.payload === 'm0' && !nacked) { nacked = true; await ack({ type: Consumer.ACK_TYPES.NEGATIVE }); }
      else await ack();
    },
    (r) => r.filter((e) => e.payload === 'm0').length >= 2 && new Set(r.map((e) => e.payload)).size >= n,
  );
  await sharedDone;
  clearTimeout(guard);
  console.log(JSON.stringify({ shared: sharedAll, exclusive: exclusiveGot, redo: redoGot }));
  // connected until the test has read the broker's stats: it closes our stdin then
  process.stdin.resume();
  process.stdin.on('end', async () => { await producer.close(); process.exit(0); });
}

// a hang guard, not a measurement: an app that never finishes says so and exits
const guard = setTimeout(() => { console.error('pulsar_flex_app: gave up after 150 s'); process.exit(2); }, 150000);

main().catch((e) => { console.error(e && e.stack ? e.stack : e); process.exit(1); });
