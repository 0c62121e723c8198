import { pricePerMillion } from '../../gateway/billing/money.js';
import type { ModelRow, PriceRow } from '../../gateway/catalog/service.js';
import { Page } from './layout.js';
import type { Viewer } from './layout.js';

/** What the organization can call, with prices, and a ready request for the chosen model. */
export function ModelsPage({
  viewer,
  models,
  chosen,
  baseUrl,
  currency,
}: {
  viewer: Viewer;
  models: Array<{ model: ModelRow; price: PriceRow }>;
  chosen: ModelRow | null;
  baseUrl: string;
  currency: string;
}) {
  const curl = chosen
    ? chosen.taskType === 'embedding'
      ? `curl ${baseUrl}/v1/embeddings \\\n  -H "Authorization: Bearer $TOLLGATE_KEY" -H "Content-Type: application/json" \\\n  -d '{"model":"${chosen.id}","input":"Hello!"}'`
      : `curl ${baseUrl}/v1/chat/completions \\\n  -H "Authorization: Bearer $TOLLGATE_KEY" -H "Content-Type: application/json" \\\n  -d '{"model":"${chosen.id}","messages":[{"role":"user","content":"Hello!"}]}'`
    : '';
  const sdk = chosen
    ? chosen.taskType === 'embedding'
      ? `import OpenAI from 'openai';\n\nconst client = new OpenAI({ baseURL: '${baseUrl}/v1', apiKey: process.env.TOLLGATE_KEY });\nconst result = await client.embeddings.create({ model: '${chosen.id}', input: 'Hello!' });\nconsole.log(result.data[0].embedding.length);`
      : `import OpenAI from 'openai';\n\nconst client = new OpenAI({ baseURL: '${baseUrl}/v1', apiKey: process.env.TOLLGATE_KEY });\nconst completion = await client.chat.completions.create({\n  model: '${chosen.id}',\n  messages: [{ role: 'user', content: 'Hello!' }],\n});\nconsole.log(completion.choices[0].message.content);`
    : '';
  return (
    <Page title="Models and pricing" user={viewer} current="models">
      <h1>Models and pricing</h1>
      <div class="table-wrap" tabindex={0} role="region" aria-label="Table (scrolls sideways on a narrow screen)">
        <table>
          <thead>
            <tr>
              <th scope="col">Model id</th>
              <th scope="col">Name</th>
              <th scope="col">Task</th>
              <th scope="col" class="num">
                Context
              </th>
              <th scope="col" class="num">
                Input / 1M tokens
              </th>
              <th scope="col" class="num">
                Output / 1M tokens
              </th>
              <th scope="col">Use</th>
            </tr>
          </thead>
          <tbody>
            {models.map(({ model, price }) => (
              <tr>
                <td>
                  <code>{model.id}</code>
                </td>
                <td>{model.displayName}</td>
                <td>{model.taskType}</td>
                <td class="num">{model.contextLength.toLocaleString('en-US')}</td>
                <td class="num">
                  {pricePerMillion(price.inputPerToken)} {currency}
                </td>
                <td class="num">
                  {pricePerMillion(price.outputPerToken)} {currency}
                </td>
                <td>
                  <a
                    href={`/portal/models?model=${encodeURIComponent(model.id)}#use`}
                    aria-label={`Examples for ${model.id}`}
                  >
                    Examples
                  </a>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      {models.length === 0 && <p class="muted">No model is served yet.</p>}
      {chosen && (
        <section id="use" class="panel">
          <h2>Call {chosen.id}</h2>
          <p>
            With one of your API keys in <code>TOLLGATE_KEY</code>:
          </p>
          <h3 id="curl-title">curl</h3>
          <pre aria-labelledby="curl-title">
            <code id="curl">{curl}</code>
          </pre>
          <button type="button" class="secondary" data-copy="#curl" hidden>
            Copy curl
          </button>
          <h3 id="sdk-title">OpenAI SDK (JavaScript)</h3>
          <pre aria-labelledby="sdk-title">
            <code id="sdk">{sdk}</code>
          </pre>
          <button type="button" class="secondary" data-copy="#sdk" hidden>
            Copy code
          </button>
        </section>
      )}
    </Page>
  );
}
