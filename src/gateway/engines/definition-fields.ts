import { z } from 'zod';
import type { EngineTenancy } from './types.js';

/** The fields every kind of engine definition may carry: whose cache it shares and how it schedules. */

/**
 * Whose prompts an engine's prefix cache may share (docs/engines.md, "Tenants in a shared engine"):
 * absent or `per-organization` keeps each organization's cache apart (vLLM: the organization's
 * `cache_salt`; llama.cpp: no prompt cache reuse); `shared` lets every organization reuse every
 * cached prefix, which lets one organization learn, from cached counts and timing, what prefixes
 * another sent.
 */
export const cacheSharing = z.enum(['per-organization', 'shared']).optional();

/**
 * vLLM's `--scheduling-policy` of the engine (absent: `fcfs`): `priority` gets each request's band
 * as its `priority`.
 */
export const schedulingPolicy = z.enum(['fcfs', 'priority']).optional();

/**
 * An engine definition's tenancy.
 *
 * @example
 * tenancyOf({ cache_sharing: 'shared' }); // { cacheSharing: 'shared', schedulingPolicy: 'fcfs' }
 */
export function tenancyOf(definition: {
  cache_sharing?: EngineTenancy['cacheSharing'];
  scheduling_policy?: EngineTenancy['schedulingPolicy'];
}): EngineTenancy {
  return {
    cacheSharing: definition.cache_sharing ?? 'per-organization',
    schedulingPolicy: definition.scheduling_policy ?? 'fcfs',
  };
}
