package translog

import (
	"context"

	"github.com/attestd/attestd/app"
	"github.com/attestd/attestd/attestation"
)

// Status is the log's newest checkpoint as the API's overview reports it
// (app.LogStatusFunc): its origin, size and signing time; false while the
// log is off or no checkpoint is signed yet.
func (s *Server) Status(ctx context.Context) (app.LogStatus, bool) {
	if !s.opt.Config.Enabled() {
		return app.LogStatus{}, false
	}
	cp, _ := s.checkpoint(ctx)
	if cp == nil {
		return app.LogStatus{}, false
	}
	return app.LogStatus{Origin: cp.Origin, Size: cp.Size, CheckpointAt: attestation.At(cp.SignedAt)}, true
}
