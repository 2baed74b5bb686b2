package store

import (
	"context"
	"sort"
)

// HistoryBundleKeys lists the incremental bundles under prefix (a
// trajectory's HistoryPrefix) in part order, which is name order since
// HistoryBundleName pads the part: each bundle's prerequisites are in the
// ones before it. The one listing of history bundles in a store.
func HistoryBundleKeys(ctx context.Context, st Store, prefix string) ([]string, error) {
	var keys []string
	err := st.List(ctx, prefix, func(fi FileInfo) error {
		if IsHistoryBundle(fi.Key) {
			keys = append(keys, fi.Key)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.Strings(keys)
	return keys, nil
}
