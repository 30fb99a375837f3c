package rocklake

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"os"

	"github.com/rocklake/rocklake-migrate/pkg/localstack"
)

//go:embed duckdb_client.py
var duckdbClient string

// DuckDBPython is the Python with DuckDB 1.5.3 and its DuckLake, postgres
// and parquet extension wheels: $ROCKLAKE_DUCKDB_PYTHON, else the tool
// cache's duckdb-python, else on PATH.
func DuckDBPython() (string, error) {
	return localstack.FindTool("duckdb-python", "ROCKLAKE_DUCKDB_PYTHON", "scripts/install-duckdb.sh")
}

// DuckDB runs DuckDB as the DuckLake client of srv: it attaches the catalog
// (DATA_PATH dataPath, no inlining: RockLake v0.47.11 does not serve inlined
// rows again after a restart), runs stmts, then queries, and returns each
// query's rows with every value as text (NULL as nil).
func DuckDB(ctx context.Context, srv *Server, dataPath string, stmts, queries []string) ([][][]*string, error) {
	py, err := DuckDBPython()
	if err != nil {
		return nil, err
	}
	req, err := json.Marshal(map[string]any{"port": srv.Port(), "data_path": dataPath, "statements": stmts, "queries": queries})
	if err != nil {
		return nil, err
	}
	// The script goes in a file so that errors name it instead of quoting it.
	script, err := os.CreateTemp("", "rocklake-duckdb-*.py")
	if err != nil {
		return nil, err
	}
	defer os.Remove(script.Name())
	_, err = script.WriteString(duckdbClient)
	if cerr := script.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, fmt.Errorf("rocklake: duckdb client script: %w", err)
	}
	out, err := run(ctx, string(req), py, script.Name())
	if err != nil {
		return nil, fmt.Errorf("rocklake: duckdb: %w", err)
	}
	var res struct {
		Results [][][]*string `json:"results"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		return nil, fmt.Errorf("rocklake: duckdb output %q: %w", out, err)
	}
	if len(res.Results) != len(queries) {
		return nil, fmt.Errorf("rocklake: duckdb answered %d of %d queries", len(res.Results), len(queries))
	}
	return res.Results, nil
}
