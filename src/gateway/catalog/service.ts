import { and, eq, or, type SQL } from 'drizzle-orm';
import type { Database } from '../../shared/db/client.js';
import { models, prices, type TaskType } from '../../shared/db/schema.js';
import { GatewayError } from '../../shared/http/errors.js';

export type ModelRow = typeof models.$inferSelect;
export type PriceRow = typeof prices.$inferSelect;
export type NewModel = Omit<typeof models.$inferInsert, 'createdAt'>;

export interface ResolvedModel {
  model: ModelRow;
  /** null when the operator has set no price: the request path refuses to serve it unbilled. */
  price: PriceRow | null;
}

/** The `model` of a request as a name to look up; 400 `model_not_found` when there is none. */
export function requestedModelName(name: unknown): string {
  if (typeof name !== 'string' || name.trim() === '') {
    throw new GatewayError('model_not_found', 'The request names no model: set "model" to an id from GET /v1/models.');
  }
  // No model is named with a NUL character (nor could the store look one up).
  if (name.includes('\u0000'))
    throw new GatewayError('model_not_found', 'The model named in the request does not exist.');
  return name;
}

/**
 * Of the models that matched `name` by any of their three names, the one it
 * means: catalog id first, then display name, then repo id. 400
 * `model_not_found` when none matched or that one is disabled.
 */
export function pickModel(
  rows: Array<{ model: ModelRow | null; price: PriceRow | null }>,
  name: string,
): ResolvedModel {
  const found = rows.filter((r): r is ResolvedModel => r.model !== null);
  const match = found.find((r) => r.model.id === name) ?? found.find((r) => r.model.displayName === name) ?? found[0];
  if (!match || !match.model.enabled) {
    throw new GatewayError(
      'model_not_found',
      `The model \`${name}\` does not exist or is not enabled. GET /v1/models lists the models you can use.`,
    );
  }
  return match;
}

/**
 * The model catalog and its prices.
 *
 * @example
 * const catalog = new CatalogService(db);
 * const { model, price } = await catalog.resolve('Qwen/Qwen2.5-7B-Instruct'); // by HF repo id
 */
export class CatalogService {
  constructor(
    private readonly db: Database,
    /**
     * Called after every write, so the request path's cache drops what it holds
     * (`catalog/request-path-cache.ts`).
     */
    private readonly changed: () => void = () => {},
  ) {}

  /**
   * Finds an enabled model by catalog id, display name or Hugging Face repo id,
   * in that order of precedence, with its price, in one query.
   */
  async resolve(name: unknown): Promise<ResolvedModel> {
    const wanted = requestedModelName(name);
    const rows = await this.db
      .select({ model: models, price: prices })
      .from(models)
      .leftJoin(prices, eq(prices.modelId, models.id))
      .where(or(eq(models.id, wanted), eq(models.displayName, wanted), eq(models.hfRepoId, wanted)));
    return pickModel(rows, wanted);
  }

  list(options: { taskType?: TaskType; includeDisabled?: boolean } = {}): Promise<ModelRow[]> {
    const filters: SQL[] = [];
    if (options.taskType) filters.push(eq(models.taskType, options.taskType));
    if (!options.includeDisabled) filters.push(eq(models.enabled, true));
    return this.db
      .select()
      .from(models)
      .where(and(...filters))
      .orderBy(models.id);
  }

  /** Enabled models with their prices, for GET /v1/pricing. */
  listPriced(): Promise<{ model: ModelRow; price: PriceRow }[]> {
    return this.db
      .select({ model: models, price: prices })
      .from(models)
      .innerJoin(prices, eq(prices.modelId, models.id))
      .where(eq(models.enabled, true))
      .orderBy(models.id);
  }

  async add(model: NewModel): Promise<ModelRow> {
    const clash = await this.db
      .select({ id: models.id })
      .from(models)
      .where(
        or(eq(models.id, model.id), eq(models.displayName, model.displayName), eq(models.hfRepoId, model.hfRepoId)),
      );
    if (clash.length > 0) {
      throw new GatewayError(
        'conflict',
        `A model with this id, display name or Hugging Face repo id already exists (${clash[0]!.id}).`,
      );
    }
    const [row] = await this.db.insert(models).values(model).returning();
    this.changed();
    return row!;
  }

  async update(
    id: string,
    changes: Partial<Pick<ModelRow, 'displayName' | 'contextLength' | 'enabled'>>,
  ): Promise<ModelRow> {
    const [row] = await this.db.update(models).set(changes).where(eq(models.id, id)).returning();
    this.changed();
    if (!row) throw new GatewayError('not_found', `Model ${id} does not exist.`, { status: 404 });
    return row;
  }

  /**
   * Sets a model's whole price. A cached-input price of null (the default) is the input price: the
   * prompt tokens the engine read from its prefix cache cost what the others do, until the operator
   * says otherwise. Batch prices of null (the default) are the input and output prices
   * (`money.ts`'s `batchPrice`).
   */
  async setPrice(
    modelId: string,
    inputPerToken: bigint,
    outputPerToken: bigint,
    {
      cachedInputPerToken = null,
      batchInputPerToken = null,
      batchOutputPerToken = null,
    }: Partial<Pick<PriceRow, 'cachedInputPerToken' | 'batchInputPerToken' | 'batchOutputPerToken'>> = {},
  ): Promise<PriceRow> {
    const [model] = await this.db.select({ id: models.id }).from(models).where(eq(models.id, modelId));
    if (!model) throw new GatewayError('not_found', `Model ${modelId} does not exist.`, { status: 404 });
    const now = new Date();
    const set = {
      inputPerToken,
      cachedInputPerToken,
      outputPerToken,
      batchInputPerToken,
      batchOutputPerToken,
      updatedAt: now,
    };
    const [row] = await this.db
      .insert(prices)
      .values({ modelId, ...set })
      .onConflictDoUpdate({ target: prices.modelId, set })
      .returning();
    this.changed();
    return row!;
  }

  /** A model's price; 404 naming what is missing, the model or its price. */
  async getPrice(modelId: string): Promise<PriceRow> {
    const [row] = await this.db
      .select({ modelId: models.id, price: prices })
      .from(models)
      .leftJoin(prices, eq(prices.modelId, models.id))
      .where(eq(models.id, modelId));
    if (!row) throw new GatewayError('not_found', `Model ${modelId} does not exist.`, { status: 404 });
    if (!row.price)
      throw new GatewayError(
        'not_found',
        `Model ${modelId} has no price: set one with PUT /admin/v1/prices/${modelId}.`,
        { status: 404 },
      );
    return row.price;
  }

  listPrices(): Promise<PriceRow[]> {
    return this.db.select().from(prices).orderBy(prices.modelId);
  }
}
