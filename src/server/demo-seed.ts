import { randomBytes } from 'node:crypto';
import { sql } from 'drizzle-orm';
import { parseAmount, pricePerTokenFromMillion } from '../gateway/billing/money.js';
import { organizations } from '../shared/db/schema.js';
import type { SimulatorDefinition } from '../gateway/engines/definitions.js';
import type { Services } from '../services.js';

export interface DemoSeed {
  orgId: string;
  keySecret: string;
  /** The demo owner's sign-in: shown once, like the key. */
  owner: { email: string; password: string };
  credit: string;
  chatModel: string | null;
  embeddingModel: string | null;
}

const DEMO_CREDIT = '10.00';
const DEMO_OWNER_EMAIL = 'demo@example.com';
// Per million tokens, in the gateway's currency.
const DEMO_PRICES = { chat: { input: '0.15', output: '0.60' }, embedding: { input: '0.02', output: '0' } } as const;

/**
 * On a first start with an empty store: a demo organization with credit, an owner who can sign in,
 * the simulator's models with prices, and one key (the owner's), so the first request works without
 * any set-up. Returns null when the store already has organizations.
 */
export async function seedDemo(services: Services, simulated: SimulatorDefinition[]): Promise<DemoSeed | null> {
  if (!(await storeIsEmpty(services))) return null;
  for (const definition of simulated) {
    const existing = await services.catalog.list({ includeDisabled: true });
    if (existing.some((m) => m.id === definition.model)) continue;
    await services.catalog.add({
      id: definition.model,
      displayName: `Simulated ${definition.model}`,
      hfRepoId: `tollgate/${definition.model}`,
      taskType: definition.task,
      contextLength: definition.max_model_len,
      enabled: true,
    });
    const price = DEMO_PRICES[definition.task];
    await services.catalog.setPrice(
      definition.model,
      pricePerTokenFromMillion(price.input),
      pricePerTokenFromMillion(price.output),
    );
  }
  const org = await services.orgs.create('Demo');
  await services.wallets.credit(org.id, 'topup', parseAmount(DEMO_CREDIT), 'demo credit');
  const owner = { email: DEMO_OWNER_EMAIL, password: randomBytes(12).toString('base64url') };
  const user = await services.users.create({
    orgId: org.id,
    name: 'Demo Owner',
    email: owner.email,
    password: owner.password,
    role: 'owner',
  });
  const { secret } = await services.keys.create({ orgId: org.id, userId: user.id, name: 'demo', expiry: 'never' });
  return {
    orgId: org.id,
    keySecret: secret,
    owner,
    credit: DEMO_CREDIT,
    chatModel: simulated.find((d) => d.task === 'chat')?.model ?? null,
    embeddingModel: simulated.find((d) => d.task === 'embedding')?.model ?? null,
  };
}

/** True while the store has no organization: a first start, as far as an operator can tell. */
export async function storeIsEmpty(services: Services): Promise<boolean> {
  const [{ count } = { count: 0 }] = await services.db
    .select({ count: sql<number>`count(*)::int` })
    .from(organizations);
  return count === 0;
}
