// Smoke test of the generated client against a running relay (run by
// examples/examples_test.go): list the accounts, place a market order with an
// Idempotency-Key, repeat it and get the same orderId back, flatten, and see
// no position left. RELAY_URL and API_TOKEN come from the environment; the
// token is never printed.
import { createClient } from './generated/client';
import {
  flattenAccountsByAccountPositionsFlatten,
  listAccountsAccounts,
  listPositionsAccountsByAccountPositions,
  placeOrderAccountsByAccountOrdersPlace,
} from './generated/sdk.gen';

// The document types each response's envelope; data is read loosely here so
// that the test reads the same before and after the data types are named.
type Loose = { success?: boolean; data?: any; orderId?: string; error?: string; detail?: string };

function must(label: string, r: { data?: unknown; error?: unknown; response?: Response }): Loose {
  const body = (r.data ?? r.error) as Loose | undefined;
  if (!r.response || r.response.status !== 200 || !body?.success) {
    throw new Error(`${label}: HTTP ${r.response?.status}: ${body?.error}: ${body?.detail}`);
  }
  return body;
}

async function main(): Promise<void> {
  const token = process.env.API_TOKEN;
  if (!token) throw new Error('set API_TOKEN');
  const client = createClient({ baseUrl: process.env.RELAY_URL ?? 'http://127.0.0.1:8080', auth: () => token });

  const accounts = must('ListAccounts', await listAccountsAccounts({ client }));
  const names: string[] = accounts.data.accounts.map((a: { name: string }) => a.name);
  console.log(`accounts: ${names.join(', ')}`);
  const account = names[0];

  const key = `ts-smoke-${Date.now()}`;
  const order = { action: 'Buy', instrument: 'ES', orderType: 'Market', quantity: 1, timeInForce: 'Day' } as const;
  const place = () =>
    placeOrderAccountsByAccountOrdersPlace({ client, path: { account }, body: order, headers: { 'Idempotency-Key': key } });
  const first = await place();
  const placed = must('PlaceOrder', first);
  console.log(`placed: ${placed.orderId}`);
  const second = await place();
  const again = must('PlaceOrder again', second);
  console.log(`replayed: ${again.orderId} (Idempotent-Replayed: ${second.response.headers.get('Idempotent-Replayed')})`);
  if (again.orderId !== placed.orderId) throw new Error('the keyed retry answered another order');

  const flat = must('Flatten', await flattenAccountsByAccountPositionsFlatten({ client, path: { account }, body: {} }));
  console.log(`flattened: ${flat.data.closedPositions.length} position(s) closed`);

  const positions = must('ListPositions', await listPositionsAccountsByAccountPositions({ client, path: { account } }));
  console.log(`positions: ${positions.data.count}`);
  if (positions.data.count !== 0) throw new Error('a position is left after Flatten');
}

main().catch((e: unknown) => {
  console.error(`smoke: ${e instanceof Error ? e.message : String(e)}`);
  process.exit(1);
});
