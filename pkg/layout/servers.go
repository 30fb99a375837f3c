package layout

import "fmt"

// Servers is the prefix under which the supervisors that follow the
// pointer keep their presence records (pkg/presence).
func Servers(pointerURL string) string { return pointerURL + ".servers/" }

// Server is the presence record of supervisor id.
func Server(pointerURL, id string) string { return Servers(pointerURL) + id + ".json" }

// ReaderCopy is the n-th copy of catalog that supervisor id serves reads
// from (pkg/supervise): beside the catalog, like a migration's replica.
func ReaderCopy(catalog, id string, n int) (string, error) {
	dir, err := besideDir(catalog)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("%sreader-%s-%d", dir, id, n), nil
}

// ReaderCheckpoint names the checkpoint supervisor id takes of a catalog
// to copy it.
func ReaderCheckpoint(id string) string { return CheckpointPrefix + "-reader-" + id }
