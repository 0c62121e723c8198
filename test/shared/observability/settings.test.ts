import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../../src/config/index.js';

// The observability settings as src/config/index.ts reads them from the environment.

describe('observability settings', () => {
  const observability = (env: Record<string, string>) => loadConfig(env).observability;

  it('defaults: metrics on, on the main port, no organization label, no traces', () => {
    expect(observability({})).toEqual({
      metrics: true,
      metricsPort: null,
      metricsHost: '127.0.0.1',
      orgLabel: false,
      tracing: null,
    });
  });

  it('a metrics port of its own, on the gateway host unless given one', () => {
    expect(observability({ TOLLGATE_METRICS_PORT: '9464', TOLLGATE_HOST: '0.0.0.0' })).toMatchObject({
      metricsPort: 9464,
      metricsHost: '0.0.0.0',
    });
    expect(observability({ TOLLGATE_METRICS_PORT: '9464', TOLLGATE_METRICS_HOST: '10.0.0.5' })).toMatchObject({
      metricsHost: '10.0.0.5',
    });
    expect(() => loadConfig({ TOLLGATE_METRICS_PORT: '70000' })).toThrow(ConfigError);
    expect(() => loadConfig({ TOLLGATE_METRICS: 'maybe' })).toThrow(ConfigError);
  });

  it('traces on with an OTLP endpoint: the traces URL is the endpoint + /v1/traces, or the traces endpoint itself', () => {
    expect(observability({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318/' }).tracing).toEqual({
      url: 'http://collector:4318/v1/traces',
      serviceName: 'tollgate',
      sampler: 'parentbased_always_on',
      samplerRatio: 1,
    });
    expect(
      observability({
        OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://tempo:4318/custom/traces',
        OTEL_SERVICE_NAME: 'gw-eu',
      }).tracing,
    ).toMatchObject({
      url: 'http://tempo:4318/custom/traces',
      serviceName: 'gw-eu',
    });
    expect(
      observability({
        OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318',
        OTEL_TRACES_SAMPLER: 'parentbased_traceidratio',
        OTEL_TRACES_SAMPLER_ARG: '0.1',
      }).tracing,
    ).toMatchObject({
      sampler: 'parentbased_traceidratio',
      samplerRatio: 0.1,
    });
  });

  it('traces stay off with OTEL_SDK_DISABLED=true or OTEL_TRACES_EXPORTER=none, and a bad sampler is refused', () => {
    expect(
      observability({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_SDK_DISABLED: 'true' }).tracing,
    ).toBeNull();
    expect(
      observability({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_TRACES_EXPORTER: 'none' }).tracing,
    ).toBeNull();
    expect(() =>
      loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_TRACES_SAMPLER: 'sometimes' }),
    ).toThrow(ConfigError);
    expect(() => loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'not a url' })).toThrow(ConfigError);
  });
});
