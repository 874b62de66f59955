package finetune

// This file owns OpenAI's list objects, shared by the files, jobs and
// events lists: the page, its cursor query and the cut.

import (
	"net/http"
	"slices"
	"strconv"
	"strings"

	"example.org/minigpt/server/internal/api"
)

// listJSON is OpenAI's list object, with has_more for cursor pages.
type listJSON[T any] struct {
	Object  string `json:"object"`
	Data    []T    `json:"data"`
	HasMore bool   `json:"has_more"`
}

// listQuery is a list's cursor: at most limit items after the one with
// the id after.
type listQuery struct {
	limit int
	after string
}

// parseListQuery reads limit (1 to 10000; def when absent) and after, and
// refuses any query parameter but those and extra.
func parseListQuery(r *http.Request, def int, extra ...string) (listQuery, *api.Error) {
	q := listQuery{limit: def}
	for k, v := range r.URL.Query() {
		switch {
		case k == "limit":
			n, err := strconv.Atoi(v[0])
			if err != nil || n < 1 || n > 10000 {
				return q, api.BadParam("limit", "invalid_value", "limit %q must be an integer in [1, 10000]", v[0])
			}
			q.limit = n
		case k == "after":
			q.after = v[0]
		case slices.Contains(extra, k):
		default:
			known := append([]string{"limit", "after"}, extra...)
			return q, api.BadParam(k, "unknown_parameter", "unknown query parameter %q: this list takes %s", k, strings.Join(known, ", "))
		}
	}
	return q, nil
}

// page cuts items (in list order) at q's cursor.
func page[T any](items []T, q listQuery, id func(T) string) listJSON[T] {
	if q.after != "" {
		i := slices.IndexFunc(items, func(t T) bool { return id(t) == q.after })
		if i < 0 {
			items = nil // the cursor's item is gone: nothing after it is known
		} else {
			items = items[i+1:]
		}
	}
	more := len(items) > q.limit
	if more {
		items = items[:q.limit]
	}
	if items == nil {
		items = []T{}
	}
	return listJSON[T]{Object: "list", Data: items, HasMore: more}
}
