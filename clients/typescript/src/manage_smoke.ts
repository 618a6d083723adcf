// Smoke test of the generated Management API client against a running relay
// (run by examples/examples_test.go), written from the Management API's
// OpenAPI document alone (/v1/api/manage/openapi.json): list the copiers,
// create an account group, rename it with its ETag in If-Match, and delete it.
// RELAY_URL and API_TOKEN (a token of a user on the elite plan) come from the
// environment; the token is never printed.
import { createClient } from './manage/client';
import { changeAccountGroup, createAccountGroup, deleteAccountGroup, listCopiers } from './manage/sdk.gen';

function must<T>(label: string, r: { data?: T; error?: unknown; response?: Response }, status = 200): T {
  if (!r.response || r.response.status !== status || r.data === undefined) {
    const e = r.error as { error?: string; detail?: string } | undefined;
    throw new Error(`${label}: HTTP ${r.response?.status}: ${e?.error}: ${e?.detail}`);
  }
  return r.data;
}

async function main(): Promise<void> {
  const token = process.env.API_TOKEN;
  if (!token) throw new Error('set API_TOKEN');
  const client = createClient({ baseUrl: process.env.RELAY_URL ?? 'http://127.0.0.1:8080', auth: () => token });

  const copiers = must('ListCopiers', await listCopiers({ client }));
  console.log(`copiers: ${copiers.data.length}`);

  const created = must(
    'CreateAccountGroup',
    await createAccountGroup({ client, body: { name: 'Smoke', destination: 'desktop', accounts: ['Sim101', 'Sim102'] } }),
    201,
  );
  const group = created.data;
  console.log(`created group: ${group.name} ${group.accounts.join(', ')} (${group.destination})`);
  const renamed = must(
    'ChangeAccountGroup',
    await changeAccountGroup({ client, path: { id: group.id }, body: { name: 'Smoke 2' }, headers: { 'If-Match': created.meta.etag } }),
  );
  console.log(`renamed: ${renamed.data.name}, changed ${renamed.changed}`);
  const deleted = must('DeleteAccountGroup', await deleteAccountGroup({ client, path: { id: group.id } }));
  console.log(`deleted: ${deleted.data.deleted}`);
}

main().catch((e: unknown) => {
  console.error(e instanceof Error ? e.message : e);
  process.exit(1);
});
