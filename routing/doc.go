// Package routing is healthroute's routing engine: it answers a DNS question from a
// block's record sets and the health of their checks, the way Route 53's routing
// policies do (docs/routing.md). It reads no Corefile and starts nothing; the plugin
// (the root package) parses a block into a Config, builds a Resolver with New and
// hands it each health snapshot with Publish.
//
// The model:
//
//   - Config is what the engine reads of a block: its zones, their SOA and NS, the
//     named Regions, the Checks by name and the RecordSets in Corefile order.
//   - A RecordSet is one `record NAME POLICY { ... }` block: a name, a Policy and its
//     Members. A Member is one line of it: its target (a Ref, shared by members
//     written alike), its policy key (a Place, for the policies that place members),
//     its check, set identifier, weight and failover Role.
//   - New numbers the configuration into a Plan, built once: one Node per record group
//     (record set, type), shared by every name whose alias tree reaches it.
//   - Publish compiles the Plan and a health snapshot into a Table: for each Node, the
//     members a query may pick and how. A Table is immutable once stored; queries load
//     the current one through an atomic pointer and never take a lock.
//   - ResolveInto answers a Query, the question with the client's subnet and
//     location, into an Answer, allocating nothing; Explain also returns why each
//     member was or was not chosen.
//
// The engine halves of latency routing (LatencyTable), AZ affinity (AZConfig) and
// the answer-series numbering (numbered when the Plan is built, walked by Plan.WalkSeries) live here too;
// the plugin counts and exports them.
package routing
