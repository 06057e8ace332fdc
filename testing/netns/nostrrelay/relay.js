// Starts the @nostr-relay (CodyTseng/nostr-relay) relay on a WebSocket
// port for the netns Nostr tests: node relay.js <host> <port> <sqlite file>.
// Only the process wiring is ours; event handling, filters, storage and
// subscriptions are the relay's.
'use strict';
const { NostrRelay, createOutgoingNoticeMessage } = require('@nostr-relay/core');
const { EventRepositorySqlite } = require('@nostr-relay/event-repository-sqlite');
const { Validator } = require('@nostr-relay/validator');
const { WebSocketServer } = require('ws');

const [host, port, dbFile] = process.argv.slice(2);

async function main() {
const repo = new EventRepositorySqlite(dbFile || ':memory:');
await repo.init();
const relay = new NostrRelay(repo);
const validator = new Validator();
const wss = new WebSocketServer({ host, port: Number(port) });

wss.on('listening', () => console.log(`nostr-relay listening on ws://${host}:${port}`));
wss.on('connection', (ws) => {
  relay.handleConnection(ws);
  ws.on('message', async (data) => {
    try {
      const msg = await validator.validateIncomingMessage(data);
      await relay.handleMessage(ws, msg);
    } catch (err) {
      ws.send(JSON.stringify(createOutgoingNoticeMessage(String(err && err.message || err))));
    }
  });
  ws.on('close', () => relay.handleDisconnect(ws));
  ws.on('error', (err) => console.error('ws error:', err.message));
});
const stop = () => { wss.close(); relay.destroy().finally(() => process.exit(0)); };
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
}

main().catch((err) => { console.error(err); process.exit(1); });
