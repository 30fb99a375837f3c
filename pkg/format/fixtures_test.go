package format_test

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/rocklake/rocklake-migrate/pkg/format"
)

// -update rewrites the fixtures. Use it only to add the fixtures of a new
// format: a released format's fixtures are its contract and never change.
var update = flag.Bool("update", false, "rewrite testdata/fixtures (new formats only)")

// fixture is one catalog entry as stored bytes and as what they mean. The
// test decodes the bytes and compares with the meaning, and encodes the
// meaning and compares with the bytes, so a change to either side of the
// contract (field numbers, key layout, envelope, byte order) fails.
type fixture struct {
	Tag   string          `json:"tag"`
	Key   string          `json:"key"`
	Parts []uint64        `json:"parts,omitempty"`
	Name  string          `json:"name,omitempty"`
	Value string          `json:"value"`
	Row   json.RawMessage `json:"row"`
}

func fixturePath(v format.Version) string {
	return filepath.Join("testdata", "fixtures", v.String()+".jsonl")
}

func TestFixtures(t *testing.T) {
	for _, v := range versions {
		if *update {
			writeFixtures(t, v)
		}
		f, err := os.Open(fixturePath(v))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		seen := map[format.Tag]int{}
		sc := bufio.NewScanner(f)
		sc.Buffer(nil, 1<<20)
		for line := 1; sc.Scan(); line++ {
			var fx fixture
			if err := json.Unmarshal(sc.Bytes(), &fx); err != nil {
				t.Fatalf("%s:%d: %v", fixturePath(v), line, err)
			}
			checkFixture(t, v, fx)
			tag, _ := format.TagByName(fx.Tag)
			seen[tag]++
		}
		if err := sc.Err(); err != nil {
			t.Fatal(err)
		}
		for _, tag := range format.KnownTags() {
			if seen[tag] == 0 {
				t.Errorf("%s: no fixture for %s", fixturePath(v), tag)
			}
		}
	}
}

func checkFixture(t *testing.T, v format.Version, fx fixture) {
	t.Helper()
	tag, ok := format.TagByName(fx.Tag)
	if !ok {
		t.Fatalf("%s: fixture tag %q", v, fx.Tag)
	}
	key, _ := hex.DecodeString(fx.Key)
	value, _ := hex.DecodeString(fx.Value)

	k, err := format.DecodeKey(v, key)
	if err != nil || k.Tag != tag || !slices.Equal(k.Parts, fx.Parts) || k.Name != fx.Name {
		t.Errorf("%s %s: key %s decoded to %+v, %v; want parts %v name %q", v, tag, fx.Key, k, err, fx.Parts, fx.Name)
	}
	if kb, err := format.EncodeKey(v, format.Key{Tag: tag, Parts: fx.Parts, Name: fx.Name}); err != nil || !bytes.Equal(kb, key) {
		t.Errorf("%s %s: key encodes to %x, %v; fixture %s", v, tag, kb, err, fx.Key)
	}

	want := mustRow(t, v, tag)
	if err := protojson.Unmarshal(fx.Row, want); err != nil {
		t.Fatalf("%s %s: fixture row: %v", v, tag, err)
	}
	got, err := format.DecodeValue(v, tag, value)
	if err != nil || !proto.Equal(got, want) {
		t.Errorf("%s %s: value %s decoded to %v, %v; want %v", v, tag, fx.Value, got, err, want)
	}
	// Deterministic marshalling is stable within one protobuf-go release
	// line; a failure here after an upgrade means catalog digests change.
	if vb, err := format.EncodeValue(v, want); err != nil || !bytes.Equal(vb, value) {
		t.Errorf("%s %s: row encodes to %x, %v; fixture %s", v, tag, vb, err, fx.Value)
	}
}

func writeFixtures(t *testing.T, v format.Version) {
	var out bytes.Buffer
	for _, tag := range format.KnownTags() {
		empty := mustRow(t, v, tag)
		full := sampleRow(t, v, tag, 42)
		for _, row := range []proto.Message{full, empty} {
			k := sampleKey(v, tag, row, 42)
			kb, err := format.EncodeKey(v, k)
			if err != nil {
				t.Fatal(err)
			}
			vb, err := format.EncodeValue(v, row)
			if err != nil {
				t.Fatal(err)
			}
			j, err := protojson.Marshal(row)
			if err != nil {
				t.Fatal(err)
			}
			var compact bytes.Buffer
			if err := json.Compact(&compact, j); err != nil {
				t.Fatal(err)
			}
			line, err := json.Marshal(fixture{Tag: tag.Name(), Key: hex.EncodeToString(kb), Parts: k.Parts, Name: k.Name,
				Value: hex.EncodeToString(vb), Row: compact.Bytes()})
			if err != nil {
				t.Fatal(err)
			}
			out.Write(append(line, '\n'))
		}
	}
	if err := os.MkdirAll(filepath.Dir(fixturePath(v)), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(fixturePath(v), out.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}
