package pgdriver

import "testing"

func TestEraseCopy(t *testing.T) {
	for _, c := range []struct {
		name, in, want string
		ok             bool
	}{
		{"data removed, members kept in order", `{"id":"1","data":{"a":"x\u0000y"},"erasurekey":"alice","type":"t"}`,
			`{"id":"1","erasurekey":"alice","type":"t","dataerased":true}`, true},
		{"base64 data removed, mark replaced in place", `{"data_base64":"AAE=","dataerased":false, "erasurekey" : "alice","x":"<&>"}`,
			`{"dataerased":true,"erasurekey":"alice","x":"<&>"}`, true},
		{"another subject", `{"data":1,"erasurekey":"bob"}`, "", false},
		{"no erasure key", `{"data":1}`, "", false},
		{"a key that is not a string", `{"data":1,"erasurekey":1}`, "", false},
		{"not an object", `["alice"]`, "", false},
		{"not JSON", `{"erasurekey":"alice",`, "", false},
	} {
		got, ok := eraseCopy([]byte(c.in), "alice")
		if ok != c.ok || string(got) != c.want {
			t.Errorf("%s: eraseCopy(%s) = %s, %v; want %s, %v", c.name, c.in, got, ok, c.want, c.ok)
		}
	}
}
