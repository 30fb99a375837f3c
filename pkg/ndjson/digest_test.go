package ndjson_test

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/rocklake/rocklake-migrate/pkg/format"
	"github.com/rocklake/rocklake-migrate/pkg/ndjson"
)

func digestOf(rs []ndjson.Record) ndjson.Digest {
	var d ndjson.Digest
	for _, r := range rs {
		d.Add(r)
	}
	return d
}

// A catalog scan and shard files of the same records, in any order and any
// split, have equal digests; any other set of records has another.
func TestDigest(t *testing.T) {
	for _, v := range versions {
		es := allEntries(t, v)
		scan := records(t, v, es)
		want := digestOf(scan)

		var raw ndjson.Digest
		for _, e := range es {
			raw.AddRaw(e.key, e.value)
		}
		if raw != want {
			t.Errorf("%s: AddRaw digest %s, Add digest %s", v, raw.Sum(), want.Sum())
		}

		_, fromFile, err := readAll(bytes.NewReader(encode(t, header(v), scan)))
		if err != nil {
			t.Fatal(err)
		}
		if got := digestOf(fromFile); got != want {
			t.Errorf("%s: shard digest %s, scan digest %s", v, got.Sum(), want.Sum())
		}

		shuffled := append([]ndjson.Record{}, fromFile...)
		rand.New(rand.NewPCG(1, 2)).Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
		merged := digestOf(shuffled[:7])
		merged.Merge(digestOf(shuffled[7:20]))
		merged.Merge(digestOf(shuffled[20:]))
		if merged != want {
			t.Errorf("%s: shuffled and merged digest %s, want %s", v, merged.Sum(), want.Sum())
		}

		twice := want
		twice.Add(scan[3])
		dropped := digestOf(scan[1:])
		for name, d := range map[string]ndjson.Digest{"a record twice": twice, "a record dropped": dropped} {
			if d.Sum() == want.Sum() {
				t.Errorf("%s: %s leaves the sum unchanged", v, name)
			}
		}

		counts := want.Counts()
		if !reflect.DeepEqual(counts, countsOf(es)) || counts["ducklake_data_file"] != 5 || counts["tag 0xC8"] != 1 || counts["tag 0x1D"] != 1 {
			t.Errorf("%s: counts %v, want %v", v, counts, countsOf(es))
		}
	}
	v1, v2 := digestOf(records(t, format.V1, allEntries(t, format.V1))), digestOf(records(t, format.V2, allEntries(t, format.V2)))
	if v1.Sum() == v2.Sum() {
		t.Error("formats 1 and 2 of the same rows have the same sum")
	}
	var zero ndjson.Digest
	if zero.Sum() != strings.Repeat("0", 64) || len(zero.Counts()) != 0 {
		t.Errorf("empty digest: %s %v", zero.Sum(), zero.Counts())
	}
	zero.AddRaw(nil, []byte("x"))
	if zero.Counts()["tag 0x00"] != 1 {
		t.Errorf("empty key counted as %v", zero.Counts())
	}
}

func TestDigestJSON(t *testing.T) {
	d := digestOf(records(t, format.V2, allEntries(t, format.V2)))
	b, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	var back ndjson.Digest
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if back != d {
		t.Errorf("%s read back as %+v", b, back)
	}
	if !strings.Contains(string(b), `"sum":"`+d.Sum()+`"`) || !strings.Contains(string(b), `"tag 0xC8":1`) {
		t.Errorf("JSON %s", b)
	}
	for _, bad := range []string{
		`{"sum":"00","counts":{}}`,
		`{"sum":"` + strings.Repeat("0", 64) + `","counts":{"ducklake_nothing":1}}`,
		`{"sum":"` + strings.Repeat("0", 64) + `","counts":{"tag 0x09":1}}`, // a known tag goes by name
		`{"sum":"` + strings.Repeat("0", 64) + `","counts":{"tag 0xc8":1}}`, // not String's spelling
		`[]`,
	} {
		if err := json.Unmarshal([]byte(bad), &back); err == nil {
			t.Errorf("%s read as a digest", bad)
		}
	}
}

// Removing a record undoes adding it, in any order, carries across words of
// the sum included: a digest kept by catch-up rounds equals the digest of
// the records that are left.
func TestDigestRemove(t *testing.T) {
	for _, v := range versions {
		scan := records(t, v, allEntries(t, v))
		want := digestOf(scan[5:])
		d := digestOf(scan)
		for _, r := range scan[:5] {
			d.Remove(r)
		}
		if d != want {
			t.Errorf("%s: after removing 5 records %s, want %s", v, d.Sum(), want.Sum())
		}
		for _, r := range scan {
			d.Remove(r)
		}
		for _, r := range scan[:5] {
			d.Add(r)
		}
		var zero ndjson.Digest
		if d != zero {
			t.Errorf("%s: every record removed: %s %v, want the empty digest", v, d.Sum(), d.Counts())
		}
		key, value := scan[0].Raw()
		d.RemoveRaw(key, value)
		d.Add(scan[0])
		if d != zero {
			t.Errorf("%s: RemoveRaw then Add: %s, want the empty digest", v, d.Sum())
		}
	}
}
