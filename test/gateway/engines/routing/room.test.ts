import { describe, expect, it } from 'vitest';
import { withRoom } from '../../../../src/gateway/engines/routing/room.js';

describe('withRoom', () => {
  const replicas = [
    { id: 'r1', inFlight: 8 },
    { id: 'r2', inFlight: 3 },
  ];

  it('keeps the replicas with room for one more, or all when none has', () => {
    expect(withRoom(replicas, 8, null).map((r) => r.id)).toEqual(['r2']);
    expect(withRoom([replicas[0]!], 8, null).map((r) => r.id)).toEqual(['r1']);
  });

  it('chooses a replica another gateway handed a slot on, full as it looks from here', () => {
    expect(withRoom(replicas, 8, null, 'r1').map((r) => r.id)).toEqual(['r1']);
    // Gone (stopped, or excluded after a failure): room decides as before.
    expect(withRoom(replicas, 8, null, 'r9').map((r) => r.id)).toEqual(['r2']);
  });
});
