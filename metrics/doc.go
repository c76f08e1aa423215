// Package metrics is eventlite's Prometheus collector: every value is
// read from the store (and a running relay) when Prometheus scrapes;
// nothing polls in between. A scrape whose reads fail fails, naming the
// read, so Prometheus's own "up" turns 0.
//
// It reads through the store's API, so it serves the same figures for a
// SQLite file and a PostgreSQL schema.
//
// NewRegistry returns a registry with the collector beside the Go
// runtime's and the process's collectors (what the CLI and serve serve):
//
//	reg, err := metrics.NewRegistry(s, &metrics.Options{Relay: relay})
//	if err != nil {
//		return err
//	}
//	http.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
//
// A service with a registry of its own registers the collector on it:
//
//	c, err := metrics.NewCollector(s, &metrics.Options{Relay: relay})
//	...
//	reg.MustRegister(c)
//
// The collector adds only eventlite's own metrics: the Go runtime's and
// the process's are the registry's (NewRegistry registers both).
// A scrape runs a fixed number of counting queries (the store's
// Inventory().Counts, store/outbox's Stats, projection.AllStats): it lists
// no dead letter, quarantined or deferred event, conflict or effect, so
// its cost hardly grows with their number.
//
// The log:
//
//	eventlite_log_head_position                         gauge   newest position in the log
//	eventlite_events_appended_total                     counter events appended (the head: positions are gap free)
//
// The outbox (store/outbox's Stats, every tenant):
//
//	eventlite_outbox_pending                            gauge   events not yet published nor discarded
//	eventlite_outbox_oldest_unpublished_age_seconds     gauge   age of the oldest pending event: the relay's lag
//	eventlite_outbox_dead_letters                       gauge   dead letters waiting for an operator
//	eventlite_outbox_parked_streams                     gauge   streams parked behind a dead letter
//	eventlite_outbox_parked_rows                        gauge   pending events of parked streams
//	eventlite_outbox_published_total                    counter events published
//	eventlite_outbox_retried_total                      counter failed attempts scheduled for a retry
//	eventlite_outbox_requeued_total                     counter dead letters re-queued by an operator
//	eventlite_outbox_dead_lettered_total                counter events dead-lettered
//	eventlite_outbox_discarded_total                    counter dead letters discarded
//
// The relay of this process, when Options.Relay is set (publish.Relay.Stats,
// since it started):
//
//	eventlite_relay_published_total                     counter events the destination accepted
//	eventlite_relay_duplicates_total                    counter of those, ones the broker already held
//	eventlite_relay_batches_total                       counter batches relayed
//	eventlite_relay_retries_total                       counter failed attempts scheduled for a retry
//	eventlite_relay_dead_lettered_total                 counter rows this relay dead-lettered
//	eventlite_relay_unreachable_rounds_total            counter rounds the destination was down
//	eventlite_relay_leases_lost_total                   counter relay leases lost to another relay
//	eventlite_relay_lease_token                         gauge   the relay lease held now, 0 while standing by
//	eventlite_relay_unreachable_since_seconds           gauge   Unix time the destination was found unreachable, 0 while it is reachable
//
// Projections (projection.AllStats), labelled projection:
//
//	eventlite_projection_checkpoint                     gauge   position applied up to
//	eventlite_projection_lag_events                     gauge   events behind the head
//	eventlite_projection_quarantined                    gauge   open quarantine entries
//	eventlite_projection_status{status}                 gauge   1 for the current status (running, idle, stopped, rebuilding), 0 for the others
//
// Consumers and effects:
//
//	eventlite_quarantined_events                        gauge   open quarantine entries, every consumer
//	eventlite_deferred_events                           gauge   external events deferred behind a version gap
//	eventlite_version_conflicts                         gauge   unresolved version conflicts
//	eventlite_effects{state,kind}                       gauge   effect ledger rows by state (AWAITING_APPROVAL, APPROVED, REJECTED, RESERVED, EXECUTING, COMPLETED, FAILED, UNKNOWN, COMPENSATED) and kind (derived, analytics, external, permission, irreversible)
//	eventlite_effects_awaiting_approval_oldest_age_seconds  gauge   how long the oldest request for a person's approval has waited, 0 when none waits
//
// Latency, in process (NewHistograms, passed as the Latency option of the
// store, the relay and the runner, and registered beside the collector),
// each observation with its trace as an exemplar when its span is sampled;
// serve them with Handler, whose OpenMetrics format carries exemplars:
//
//	eventlite_append_duration_seconds                   histogram Append and tx.Append calls
//	eventlite_publish_duration_seconds                  histogram a relay round's publish, acks included
//	eventlite_projection_batch_duration_seconds         histogram a runner's batch that had work
package metrics
