import { and, eq, inArray, sql } from 'drizzle-orm';
import type { Database } from '../../shared/db/client.js';
import { storedResponseInputItems, storedResponses } from '../../shared/db/schema.js';
import { GatewayError } from '../../shared/http/errors.js';
import { rowsOf } from '../../shared/db/rows.js';
import type { ConversationTurn } from './store.js';

type Json = Record<string, unknown>;

/**
 * The conversation that ends with `id`, oldest turn first: two statements.
 * The first walks back from `id` by ids and sizes alone, one turn past either
 * bound at most, so a refusal reads no turn's text; the second reads the
 * turns' input items (in order, joined by the database into one text a turn)
 * and outputs, never the rest of the responses.
 */
export async function readChain(
  db: Database,
  orgId: string,
  id: string,
  bounds: { chainMaxTurns: number; chainMaxBytes: number },
): Promise<ConversationTurn[] | null> {
  const { chainMaxTurns, chainMaxBytes } = bounds;
  const result = await db.execute(sql`
    with recursive walk(id, previous_response_id, depth, total) as (
      select id, previous_response_id, 1, bytes::bigint from ${storedResponses}
       where id = ${id} and org_id = ${orgId} and expires_at > now()
      union all
      select r.id, r.previous_response_id, w.depth + 1, w.total + r.bytes
        from walk w join ${storedResponses} r on r.id = w.previous_response_id
       where r.org_id = ${orgId} and r.expires_at > now() and w.depth <= ${chainMaxTurns} and w.total <= ${chainMaxBytes}
    )
    select id, depth, total from walk order by depth desc`);
  const walked = rowsOf<{ id: string; depth: number | string; total: number | string | bigint }>(result);
  const [deepest] = walked;
  if (!deepest) return null;
  if (Number(deepest.depth) > chainMaxTurns)
    throw chainRefusal(`more than ${chainMaxTurns} turns`, `TOLLGATE_RESPONSES_CHAIN_MAX_TURNS=${chainMaxTurns}`);
  if (Number(deepest.total) > chainMaxBytes)
    throw chainRefusal(`more than ${chainMaxBytes} bytes`, `TOLLGATE_RESPONSES_CHAIN_MAX_BYTES=${chainMaxBytes}`);
  const items = storedResponseInputItems;
  const rows = await db
    .select({
      id: storedResponses.id,
      // The response's text only for a row stored before output_json (see the schema), never for a
      // later one.
      output: sql<string>`coalesce(${storedResponses.output}, ${storedResponses.response})`,
      input: sql<string | null>`(select string_agg(${items.item}, ',' order by ${items.position}) from ${items}
        where ${items.responseId} = ${storedResponses.id})`,
    })
    .from(storedResponses)
    .where(
      and(
        eq(storedResponses.orgId, orgId),
        inArray(
          storedResponses.id,
          walked.map((turn) => turn.id),
        ),
      ),
    );
  const byId = new Map(rows.map((row) => [row.id, row]));
  // A turn deleted between the two reads ends the chain there, as if it had gone before.
  const turns: ConversationTurn[] = [];
  for (const turn of walked) {
    const row = byId.get(turn.id);
    if (row) turns.push(turnOf(row));
    else turns.length = 0;
  }
  return turns.at(-1)?.id === id ? turns : null;
}

/**
 * A turn as a conversation reads it: its input items and its response's id and output; the rest is
 * not read.
 */
function turnOf(row: { id: string; output: string; input: string | null }): ConversationTurn {
  return {
    id: row.id,
    input: JSON.parse(`[${row.input ?? ''}]`) as Json[],
    response: { id: row.id, output: outputOf(JSON.parse(row.output)) },
  };
}

/** An output as stored: its own text, or (a row from before output_json) the whole response's. */
function outputOf(stored: unknown): unknown {
  return Array.isArray(stored) ? stored : ((stored as Json | null)?.output ?? []);
}

function chainRefusal(what: string, setting: string): GatewayError {
  return new GatewayError(
    'invalid_request',
    `The conversation before \`previous_response_id\` is ${what}, more than the gateway continues (${setting}); start a new one.`,
    {
      details: [{ field: 'previous_response_id', message: `the conversation is ${what}` }],
    },
  );
}
