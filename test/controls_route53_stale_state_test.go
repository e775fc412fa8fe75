package test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/route53"
	"github.com/aws/aws-sdk-go-v2/service/route53/types"
	"github.com/miekg/dns"

	"github.com/healthroute/healthroute/internal/coretest"
	"github.com/healthroute/healthroute/r53api"
)

// TestControlsStartServesAZoneThatDoesNotConvert: a data directory whose state
// holds a zone the importer cannot convert (race0 both CNAME and A, as racing
// batches left it before the state machine checked conversions). The server
// starts anyway, answers the Corefile's records, logs why it leaves the zone's
// API-managed record sets out, and a batch that repairs the zone is accepted and
// served.
func TestControlsStartServesAZoneThatDoesNotConvert(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "state")
	if err := os.MkdirAll(data, 0o700); err != nil {
		t.Fatal(err)
	}
	write := func(name, content string) {
		if err := os.WriteFile(filepath.Join(data, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("identity.json", `{"fleet":"no-key","member":"local"}`)
	key := func(typ string) string { return `race0.example.org.\u0000` + typ + `\u0000` }
	write("state.json", fmt.Sprintf(`{"index":7,"term":2,"seq":0,"controls":{},"changed":{},"overrides":{},"audit":[],
"api":{"gen":7,"zones":{"example.org.":{"record_sets":{
"%s":{"Name":"race0.example.org.","Type":"CNAME","TTL":30,"ResourceRecords":[{"Value":"www.example.org."}]},
"%s":{"Name":"race0.example.org.","Type":"A","TTL":30,"ResourceRecords":[{"Value":"192.0.2.1"}]}}}}}}`, key("CNAME"), key("A")))

	keys := writeR53Keys(t, dir)
	port, apiPort := coretest.FreePort(t), coretest.FreePort(t)
	srv := coretest.Start(t, fmt.Sprintf(`example.org:%d {
    bind 127.0.0.1
    healthroute {
        route53_api 127.0.0.1:%d {
            access_keys %s
        }
        controls {
            data_dir %s
        }
        record www.example.org. simple {
            A 192.0.2.80
        }
    }
}
`, port, apiPort, keys, data), port, "www.example.org")
	if got := answersA(srv.Query(t, "www.example.org", dns.TypeA)); len(got) != 1 || got[0] != "192.0.2.80" {
		t.Fatalf("www.example.org A %v, want the Corefile's 192.0.2.80", got)
	}
	if out := srv.Output(); !strings.Contains(out, "the API-managed record sets of example.org. do not convert") {
		t.Fatalf("the server does not say why it leaves the zone out:\n%s", out)
	}
	client := r53Client(fmt.Sprintf("127.0.0.1:%d", apiPort), r53KeyID, r53Secret)
	del := types.Change{Action: types.ChangeActionDelete, ResourceRecordSet: &types.ResourceRecordSet{Name: aws.String("race0.example.org."), Type: types.RRTypeCname,
		TTL: aws.Int64(30), ResourceRecords: []types.ResourceRecord{{Value: aws.String("www.example.org.")}}}}
	out, err := client.ChangeResourceRecordSets(context.Background(), &route53.ChangeResourceRecordSetsInput{
		HostedZoneId: aws.String(r53api.ZoneID("example.org.")), ChangeBatch: &types.ChangeBatch{Changes: []types.Change{del}}})
	if err != nil {
		t.Fatalf("the repair (delete the CNAME): %v", err)
	}
	waitInSync(t, client, aws.ToString(out.ChangeInfo.Id))
	srv.WaitFor(t, "race0.example.org", dns.TypeA, 10*time.Second, "race0 answers its A record", func(m *dns.Msg) bool {
		got := answersA(m)
		return len(got) == 1 && got[0] == "192.0.2.1"
	})
}
