/**
 * The settings of how the fleet is shared: which replica a request goes to, and how it waits when
 * all are full.
 */

/** How replicas are chosen (TOLLGATE_ROUTING_*; see docs/settings.md). */
export interface RoutingSettings {
  /**
   * scored: metrics and prefix affinity; least-loaded: fewest in flight from this gateway;
   * round-robin: in turn.
   */
  policy: 'scored' | 'least-loaded' | 'round-robin';
  scrapeMs: number;
  queueWeight: number;
  kvWeight: number;
  prefixWeight: number;
  sessionWeight: number;
  prefixBlockChars: number;
  prefixEntries: number;
  prefixTtlMs: number;
  /**
   * Requests in flight a replica may have beyond the least busy one and still win on prefix or
   * session affinity (TOLLGATE_ROUTING_AFFINITY_SLACK, 2 when not given).
   */
  affinitySlack?: number;
  /**
   * Or this share of the least busy candidate's requests in flight, when larger: at saturation
   * every replica runs dozens and a fixed slack turned affinity off on noise
   * (TOLLGATE_ROUTING_AFFINITY_SLACK_SHARE, 0.5 when not given).
   */
  affinitySlackShare?: number;
  /**
   * Requests a replica whose batch size nobody declared and it has not shown may be sent beyond
   * what its last scrape showed running (TOLLGATE_ROUTING_PROBE_SLOTS, 2 when not given).
   */
  probeSlots?: number;
}

/** TOLLGATE_FLOW_*: how requests wait when the fleet is full (docs/fair-sharing.md). */
export interface FlowSettings {
  /**
   * Off: every request goes to the engines at once, as before flow control
   * (TOLLGATE_FLOW_CONTROL=off).
   */
  enabled: boolean;
  /**
   * Requests one organization may have waiting, over every model and band
   * (TOLLGATE_FLOW_QUEUE_PER_ORG).
   */
  queuePerOrg: number;
  /** Requests waiting in all (TOLLGATE_FLOW_QUEUE_TOTAL). */
  queueTotal: number;
  /** The longest a request waits before it is refused as overloaded (TOLLGATE_FLOW_MAX_WAIT_MS). */
  maxWaitMs: number;
  /**
   * What a prompt token and a generated token weigh in the fair share (TOLLGATE_FLOW_INPUT_WEIGHT,
   * _OUTPUT_WEIGHT).
   */
  inputWeight: number;
  outputWeight: number;
  /**
   * How often a model with waiting requests looks for room it was not told of
   * (TOLLGATE_FLOW_POLL_MS).
   */
  pollMs: number;
  /**
   * Slots of a model the batch band leaves free, on engines that do not schedule by priority, while
   * a better band sent a request within `batchHeadroomMs` (TOLLGATE_FLOW_BATCH_HEADROOM, _MS): a
   * running batch request cannot yield there, so an interactive one would wait for it to end.
   */
  batchHeadroom: number;
  batchHeadroomMs: number;
  /**
   * Slots of a model the organization holding the most of it leaves free for others, on engines
   * that do not schedule by priority (TOLLGATE_FLOW_SHARE_HEADROOM; 0 when not given): there a
   * stream runs to its end, and a flood whose streams end together would keep a newcomer waiting
   * for a whole wave. On engines that schedule by priority a newcomer below its share is sent
   * ahead of the flood instead.
   */
  shareHeadroom?: number;
  /**
   * Gateways sharing Redis hand each other a slot when another's waiting request goes first
   * (TOLLGATE_FLOW_PEERS).
   */
  peers: boolean;
}
