package bench

import "testing"

// TestLotteryAgainstSeckilld runs the lottery scenario small: 400
// entrants for 30 units, a 2 s entry window, a 1 s payment window. It
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
		l["left_to_expire"] != 3.0 || l["promoted"] != 3.0 || l["promoted_paid"] != 3.0 || l["paid"] != 27.0 || l["repeats_same_entry"] != 20.0 {
		t.Fatalf("lottery report %v\n%s", l, output)
	}
}
