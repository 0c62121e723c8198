import { pricePerTokenFromMillion } from '../../../gateway/billing/money.js';
import { segment } from '../client.js';
import { table } from '../output.js';
import {
  BOOLEAN,
  type Command,
  type List,
  type ModelView,
  type PriceView,
  type PricingList,
  type PublicModelView,
  STRING,
} from './command.js';

// `models` (what an API key can call, and its prices), `models
// list|add|enable|disable` and `prices set|list`. Prices are per million
// tokens, as decimal strings.
//
// @example
// tollgate models --api-key sk-gw-... tollgate models add --id qwen-7b --name "Qwen 7B" --hf-repo
// Qwen/Qwen2.5-7B-Instruct --task chat --context-length 32768 tollgate prices set --model qwen-7b
// --input 0.15 --output 0.60

const price = (m: ModelView) => (m.price ? `${m.price.input_per_million} / ${m.price.output_per_million}` : 'no price');

/** A model from GET /v1/models with its price from GET /v1/pricing (null when it has none). */
type PricedModel = PublicModelView & {
  price: {
    input_per_million_tokens: string;
    cached_input_per_million_tokens: string;
    output_per_million_tokens: string;
    currency: string;
  } | null;
};

const available: Command<List<PricedModel> & { currency: string }> = {
  name: 'models',
  args: '[--api-key KEY]',
  summary:
    'List the models an API key can call, with prices per million tokens (key: --api-key, else $TOLLGATE_API_KEY; not the operator token).',
  api: 'public',
  options: { 'api-key': STRING },
  request: () => [
    { method: 'GET', path: '/models' },
    { method: 'GET', path: '/pricing' },
  ],
  combine: (bodies) => {
    const [models, pricing] = bodies as [List<PublicModelView>, PricingList];
    const priceOf = new Map(pricing.data.map((p) => [p.model, p]));
    return {
      object: 'list',
      currency: pricing.currency,
      data: models.data.map((m) => {
        const p = priceOf.get(m.id);
        return {
          ...m,
          price: p
            ? {
                input_per_million_tokens: p.input_per_million_tokens,
                cached_input_per_million_tokens: p.cached_input_per_million_tokens,
                output_per_million_tokens: p.output_per_million_tokens,
                currency: pricing.currency,
              }
            : null,
        };
      }),
    };
  },
  render: ({ data }) =>
    table([
      ['ID', 'TASK', 'INPUT / 1M', 'CACHED INPUT / 1M', 'OUTPUT / 1M'],
      ...data.map((m) => [
        m.id,
        m.task_type ?? '-',
        m.price ? `${m.price.input_per_million_tokens} ${m.price.currency}` : 'no price',
        m.price ? `${m.price.cached_input_per_million_tokens} ${m.price.currency}` : 'no price',
        m.price ? `${m.price.output_per_million_tokens} ${m.price.currency}` : 'no price',
      ]),
    ]),
};

const list: Command<List<ModelView>> = {
  name: 'models list',
  args: '[--all]',
  summary: 'List enabled models (--all: disabled ones too) with prices per million tokens.',
  options: { all: BOOLEAN },
  request: (a) => ({ method: 'GET', path: a.flag('all') ? '/models?include_disabled=true' : '/models' }),
  render: ({ data }) =>
    table([
      ['ID', 'NAME', 'TASK', 'CONTEXT', 'ENABLED', 'PRICE IN / OUT'],
      ...data.map((m) => [
        m.id,
        m.display_name,
        m.task_type,
        String(m.context_length),
        m.enabled ? 'yes' : 'no',
        price(m),
      ]),
    ]),
};

const add: Command<ModelView> = {
  name: 'models add',
  args: '--id ID --name N --hf-repo R --task chat|embedding --context-length N',
  summary: 'Add a model to the catalog.',
  options: { id: STRING, name: STRING, 'hf-repo': STRING, task: STRING, 'context-length': STRING },
  request: (a) => ({
    method: 'POST',
    path: '/models',
    body: {
      id: a.required('id'),
      display_name: a.required('name'),
      hf_repo_id: a.required('hf-repo'),
      task_type: a.required('task'),
      context_length: a.requiredInt('context-length', 1, 10_000_000),
    },
  }),
  render: (m) =>
    `Added model ${m.id} (${m.task_type}, ${m.hf_repo_id}). Set its price with: tollgate prices set --model ${m.id} --input X --output Y`,
};

function toggle(enabled: boolean): Command<ModelView> {
  return {
    name: enabled ? 'models enable' : 'models disable',
    args: 'ID',
    summary: enabled ? 'Serve a model again.' : 'Stop serving a model (it stays in the catalog).',
    positionals: 1,
    request: (a) => ({ method: 'PATCH', path: `/models/${segment(a.id('model ID'))}`, body: { enabled } }),
    render: (m) => `Model ${m.id} is ${m.enabled ? 'enabled' : 'disabled'}.`,
  };
}

const setPrice: Command<PriceView> = {
  name: 'prices set',
  args: '--model ID --input 0.15 --output 0.60 [--cached-input 0.015] [--batch-input 0.075] [--batch-output 0.30]',
  summary:
    "Set a model's price per million input, cached input (prompt tokens read from the engine's prefix cache; default: the input price) and output tokens, and a batch line's input and output (default: the input and output prices).",
  options: {
    model: STRING,
    input: STRING,
    'cached-input': STRING,
    output: STRING,
    'batch-input': STRING,
    'batch-output': STRING,
  },
  request: (a) => ({
    method: 'PUT',
    path: `/prices/${segment(a.id('model', 'model'))}`,
    body: {
      input_per_million: a.money('input', pricePerTokenFromMillion),
      ...(a.has('cached-input') && { cached_input_per_million: a.money('cached-input', pricePerTokenFromMillion) }),
      output_per_million: a.money('output', pricePerTokenFromMillion),
      ...(a.has('batch-input') && { batch_input_per_million: a.money('batch-input', pricePerTokenFromMillion) }),
      ...(a.has('batch-output') && { batch_output_per_million: a.money('batch-output', pricePerTokenFromMillion) }),
    },
  }),
  render: (p) =>
    `Price of ${p.model_id}: input ${p.input_per_million}, cached input ${p.cached_input_per_million}, output ${p.output_per_million}, ` +
    `batch input ${p.batch_input_per_million}, batch output ${p.batch_output_per_million} ${p.currency} per million tokens.`,
};

const listPrices: Command<List<PriceView>> = {
  name: 'prices list',
  args: '',
  summary: 'List prices per million tokens.',
  request: () => ({ method: 'GET', path: '/prices' }),
  render: ({ data }) =>
    table([
      ['MODEL', 'INPUT / 1M', 'CACHED INPUT / 1M', 'OUTPUT / 1M', 'BATCH IN / 1M', 'BATCH OUT / 1M', 'CURRENCY'],
      ...data.map((p) => [
        p.model_id,
        p.input_per_million,
        p.cached_input_per_million,
        p.output_per_million,
        p.batch_input_per_million,
        p.batch_output_per_million,
        p.currency,
      ]),
    ]),
};

export const catalogCommands = [available, list, add, toggle(true), toggle(false), setPrice, listPrices];
