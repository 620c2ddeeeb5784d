package migrate

import (
	"strings"
	"testing"
	"testing/fstest"
)

func TestLoad(t *testing.T) {
	for _, tc := range []struct {
		name    string
		files   map[string]string
		want    []string // names in order
		wantErr string
	}{
		{"ordered by version", map[string]string{"m/0010_b.sql": "B", "m/0002_a.sql": "A", "m/README": "x"}, []string{"0002_a", "0010_b"}, ""},
		{"no underscore", map[string]string{"m/0001.sql": ""}, nil, "not NNNN_name.sql"},
		{"not a number", map[string]string{"m/x_a.sql": ""}, nil, "not NNNN_name.sql"},
		{"version 0", map[string]string{"m/0000_a.sql": ""}, nil, "not NNNN_name.sql"},
		{"shared version", map[string]string{"m/0001_a.sql": "", "m/1_b.sql": ""}, nil, "share version 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fsys := fstest.MapFS{}
			for p, body := range tc.files {
				fsys[p] = &fstest.MapFile{Data: []byte(body)}
			}
			ms, err := Load(fsys, "m")
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Load = %v, %v; want an error saying %q", ms, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, m := range ms {
				names = append(names, m.Name)
			}
			if strings.Join(names, ",") != strings.Join(tc.want, ",") {
				t.Errorf("Load names = %v, want %v", names, tc.want)
			}
			if ms[0].SQL != "A" || ms[0].Version != 2 {
				t.Errorf("first migration = %+v", ms[0])
			}
		})
	}
}
