package indexer

import (
	"github.com/attestd/attestd/internal/metric"
	"github.com/prometheus/client_golang/prometheus"
)

type metrics struct {
	attestations  prometheus.Counter
	transactions  prometheus.Counter
	skipped       *prometheus.CounterVec
	finalized     prometheus.Counter
	forked        prometheus.Counter
	lag           prometheus.Gauge
	chainSlot     prometheus.Gauge
	indexedSlot   prometheus.Gauge
	leader        prometheus.Gauge
	wsConnected   prometheus.Gauge
	batchDuration prometheus.Histogram
	syncDuration  prometheus.Histogram
	pending       prometheus.Gauge
	pendingTries  prometheus.Counter
	pendingDone   *prometheus.CounterVec
	reconciles    *prometheus.CounterVec
	repairedTxs   *prometheus.CounterVec
	repairedAtts  *prometheus.CounterVec
	frontier      prometheus.Gauge
	batchRecords  prometheus.Gauge
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		attestations: prometheus.NewCounter(prometheus.CounterOpts{Name: "attestd_indexer_attestations_ingested_total",
			Help: "Attestations newly stored by the indexer."}),
		transactions: prometheus.NewCounter(prometheus.CounterOpts{Name: "attestd_indexer_transactions_processed_total",
			Help: "Program transactions processed (successful or failed)."}),
		skipped: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "attestd_indexer_transactions_skipped_total",
			Help: "Transactions not indexed, by reason (failed, vanished, undecodable, no_events)."}, []string{"reason"}),
		finalized: prometheus.NewCounter(prometheus.CounterOpts{Name: "attestd_indexer_transactions_finalized_total",
			Help: "Transactions promoted from confirmed to finalized."}),
		forked: prometheus.NewCounter(prometheus.CounterOpts{Name: "attestd_indexer_transactions_forked_total",
			Help: "Confirmed transactions removed because a fork dropped them."}),
		lag: prometheus.NewGauge(prometheus.GaugeOpts{Name: "attestd_indexer_lag_slots",
			Help: "Chain slot minus the slot through which the index is complete."}),
		chainSlot: prometheus.NewGauge(prometheus.GaugeOpts{Name: "attestd_indexer_chain_slot",
			Help: "Latest confirmed slot seen on the chain."}),
		indexedSlot: prometheus.NewGauge(prometheus.GaugeOpts{Name: "attestd_indexer_indexed_slot",
			Help: "Slot through which the index is complete."}),
		leader: prometheus.NewGauge(prometheus.GaugeOpts{Name: "attestd_indexer_leader",
			Help: "1 while this process holds the writer lock."}),
		wsConnected: prometheus.NewGauge(prometheus.GaugeOpts{Name: "attestd_indexer_websocket_connected",
			Help: "1 while the logs subscription is up."}),
		batchDuration: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "attestd_indexer_batch_duration_seconds",
			Help: "Time to apply one batch to Postgres.", Buckets: prometheus.ExponentialBuckets(0.001, 2, 14)}),
		syncDuration: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "attestd_indexer_sync_duration_seconds",
			Help: "Time of one sync round (list, fetch, apply).", Buckets: prometheus.ExponentialBuckets(0.001, 2, 16)}),
	}
	m.pending = metric.Register(reg, prometheus.NewGauge(prometheus.GaugeOpts{Name: "attestd_indexer_pending_transactions",
		Help: "Listed transactions that getTransaction has not returned yet, waiting for a retry."}))
	m.pendingTries = metric.Register(reg, prometheus.NewCounter(prometheus.CounterOpts{Name: "attestd_indexer_pending_retries_total",
		Help: "Retries of pending transactions that getTransaction still did not return."}))
	m.pendingDone = metric.Register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{Name: "attestd_indexer_pending_resolved_total",
		Help: "Pending transactions settled, by outcome (indexed: fetched at last; vanished: the chain no longer knows them)."}, []string{"outcome"}))
	m.reconciles = metric.Register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{Name: "attestd_indexer_reconciliations_total",
		Help: "Passes comparing a chain range with what is stored, by range (finalized: the recent finalized window; confirmed: finalized slot to checkpoint) and result."}, []string{"range", "result"}))
	m.repairedTxs = metric.Register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{Name: "attestd_indexer_gap_transactions_repaired_total",
		Help: "Transactions a reconciliation found missing from the store and indexed, by range."}, []string{"range"}))
	m.repairedAtts = metric.Register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{Name: "attestd_indexer_gap_attestations_repaired_total",
		Help: "Attestations stored by reconciliations (a nonzero rate means gaps were found), by range."}, []string{"range"}))
	m.frontier = metric.Register(reg, prometheus.NewGauge(prometheus.GaugeOpts{Name: "attestd_indexer_log_frontier_slot",
		Help: "The newest slot whose attestations are all stored and final, checked against the chain: the transparency log appends up to it."}))
	m.batchRecords = metric.Register(reg, prometheus.NewGauge(prometheus.GaugeOpts{Name: "attestd_indexer_batch_records",
		Help: "Records a batch may hold now: 5,000, halved while batches time out in PostgreSQL and doubled back after 10 applied in a row."}))
	m.attestations = metric.Register(reg, m.attestations)
	m.transactions = metric.Register(reg, m.transactions)
	m.skipped = metric.Register(reg, m.skipped)
	m.finalized = metric.Register(reg, m.finalized)
	m.forked = metric.Register(reg, m.forked)
	m.lag = metric.Register(reg, m.lag)
	m.chainSlot = metric.Register(reg, m.chainSlot)
	m.indexedSlot = metric.Register(reg, m.indexedSlot)
	m.leader = metric.Register(reg, m.leader)
	m.wsConnected = metric.Register(reg, m.wsConnected)
	m.batchDuration = metric.Register(reg, m.batchDuration)
	m.syncDuration = metric.Register(reg, m.syncDuration)
	return m
}
