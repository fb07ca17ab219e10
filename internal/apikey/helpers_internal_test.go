package apikey

import "github.com/attestd/attestd/internal/apierror"

func apiErr(err error) (int, bool) {
	e, ok := apierror.As(err)
	if !ok {
		return 0, false
	}
	return e.Status, true
}
