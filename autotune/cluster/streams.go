package cluster

import (
	"context"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// dedupWindow is how long JetStream remembers a message ID: a job
// published again (by a restarted tuner) or a result published twice (by
// two workers that both finished a redelivered job) within it is stored
// once.
const dedupWindow = 2 * time.Hour

// resultAge is how long results are kept: a campaign stopped longer ago
// than this measures what it had in flight again.
const resultAge = 7 * 24 * time.Hour

// announceTTL is how long a worker's announcement outlives its last
// refresh (every announceTTL/3).
const announceTTL = 30 * time.Second

// ensureStreams creates the job and result streams and the workers'
// bucket, or updates them to loom's configuration.
func ensureStreams(ctx context.Context, js jetstream.JetStream) (jetstream.KeyValue, error) {
	if _, err := js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
		Name:        jobStream,
		Description: "loom's tuning jobs (build and measure), one consumer per kind and target",
		Subjects:    []string{"loom.job.>"},
		Retention:   jetstream.WorkQueuePolicy,
		Storage:     jetstream.FileStorage,
		Duplicates:  dedupWindow,
		MaxMsgSize:  MaxPayload,
	}); err != nil {
		return nil, fmt.Errorf("cluster: stream %s: %w", jobStream, err)
	}
	if _, err := js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
		Name:        resultStream,
		Description: "results of loom's tuning jobs, by campaign",
		Subjects:    []string{"loom.result.>"},
		Retention:   jetstream.LimitsPolicy,
		Storage:     jetstream.FileStorage,
		Duplicates:  dedupWindow,
		MaxAge:      resultAge,
		MaxMsgSize:  MaxPayload,
	}); err != nil {
		return nil, fmt.Errorf("cluster: stream %s: %w", resultStream, err)
	}
	kv, err := js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{
		Bucket:      workerBucket,
		Description: "loom workers and their machines",
		TTL:         announceTTL,
		Storage:     jetstream.MemoryStorage,
	})
	if err != nil {
		return nil, fmt.Errorf("cluster: bucket %s: %w", workerBucket, err)
	}
	return kv, nil
}

// consumer is the durable consumer of kind's jobs for target, which all
// workers of that target share.
func consumer(ctx context.Context, js jetstream.JetStream, kind, target string, deadline time.Duration) (jetstream.Consumer, error) {
	c, err := js.CreateOrUpdateConsumer(ctx, jobStream, jetstream.ConsumerConfig{
		Durable:       kind + "_" + target,
		FilterSubject: jobFilter(kind, target),
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       deadline,
		MaxDeliver:    -1,
		MaxAckPending: 100000,
	})
	if err != nil {
		return nil, fmt.Errorf("cluster: consumer of %s jobs for %s: %w", kind, target, err)
	}
	return c, nil
}
