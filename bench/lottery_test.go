package bench

import "testing"

// TestLotteryAgainstSeckilld runs the lottery scenario small: 400
// entrants for 30 units, a 2 s entry window, a 1 s payment window (a payment answered after its reservation's expire_at
// is counted as late, not as a failure). It
// waits for a real beacon round's time (quicknet's 3 s period), so it
// takes about 10 s.
func TestLotteryAgainstSeckilld(t *testing.T) {
	target := startSeckilld(t, serverOptions{paymentSecret: "pay-secret"})
	status, result, output := runMain(t, "--target", target, "--admin-token", "admin", "--scenario", "lottery",
		"--stock", "30", "--requests", "400", "--concurrency", "16", "--duration", "2s",
		"--payment-window", "1s", "--payment-secret", "pay-secret")
	if status != ExitPass {
		t.Fatalf("exit %d\n%s", status, output)
	}
	l, ok := result["lottery"].(map[string]any)
	if !ok {
		t.Fatal("lottery report missing")
	}
	if l["entered"] != 400.0 || l["winners"] != 30.0 || l["waitlisted"] != 30.0 || l["auditor_ok"] != true ||
		l["left_to_expire"] != 3.0 || l["promoted"] != 3.0 || l["repeats_same_entry"] != 20.0 ||
		// A payment answered after its reservation's expire_at may be refused
		// (a loaded machine): the tool counts it apart, having checked it was late.
		l["promoted_paid"].(float64)+l["promoted_paid_late"].(float64) != 3.0 || l["paid"].(float64)+l["paid_late"].(float64) != 27.0 {
		t.Fatalf("lottery report %v\n%s", l, output)
	}
}
