package httpapi

// HasFollower reports whether a reserve of the user on the SKU is waiting
// behind the user's reserve in flight (a flight's done channel is made by
// its first follower): for tests that order a repeat against a held answer
// without sleeping.
func HasFollower(s *Server, campaignID, skuID, userID string) bool {
	key := userKey(campaignID, skuID, userID)
	sh := &s.flights.shards[shardOf(key)]
	sh.mu.Lock()
	defer sh.mu.Unlock()
	fl := find(sh.head(key.hash), key)
	return fl != nil && fl.done != nil
}

// Routes lists the routes the server's router serves: paths by method.
func Routes(s *Server) map[string][]string {
	r, _ := s.router()
	return r.List()
}
