import { RATE } from './redis-lua.js';
import { gateScript } from './redis-script.js';

/**
 * The first step of an admission (`LimitGate.admitRate`): a key's requests per minute and
 * concurrency, checked before either is taken, by the same Lua as `ADMIT`'s (`RATE`), which then
 * takes only the token limits and the hold. Returns {'admitted', used, reset ms, now} or `ADMIT`'s
 * two rate refusals.
 */
export const ADMIT_RATE = gateScript({
  name: 'tollgateAdmitRate',
  keys: ['rpm', 'conc'],
  args: ['rpmLimit', 'concLimit', 'slotLeaseMs', 'requestId', 'minuteMs'],
  clock: true,
  body: `${RATE}
local minute = tonumber(ARG.minuteMs)
local refusal, used, reset = checkRate(KEY.rpm, KEY.conc, tonumber(ARG.rpmLimit), tonumber(ARG.concLimit), minute)
if refusal then return refusal end
takeRate(KEY.rpm, KEY.conc, minute, tonumber(ARG.slotLeaseMs), ARG.requestId)
return {'admitted', used, reset, now}
`,
});

/**
 * Gives back what `ADMIT_RATE` took, for a request refused before `ADMIT` took it over: its slot,
 * and its count if its minute has not ended (`windowEnd`, Redis clock ms; after it, the count would
 * come out of the next minute's).
 */
export const GIVE_BACK_RATE = gateScript({
  name: 'tollgateGiveBackRate',
  keys: ['rpm', 'conc'],
  args: ['requestId', 'windowEnd'],
  clock: true,
  body: `
redis.call('ZREM', KEY.conc, ARG.requestId)
if now < tonumber(ARG.windowEnd) and tonumber(redis.call('GET', KEY.rpm) or '0') > 0 then redis.call('DECR', KEY.rpm) end
return 1
`,
});
