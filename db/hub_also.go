package db

// SubscribeAlso makes s receive the pokes of more keys too (a delegate's
// inbox stream hears of the inboxes they decide for), until the returned
// function is called.
func (h *Hub) SubscribeAlso(s *Subscription, keys ...string) (stop func()) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, k := range keys {
		if h.subs[k] == nil {
			h.subs[k] = map[*Subscription]struct{}{}
		}
		h.subs[k][s] = struct{}{}
	}
	return func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		for _, k := range keys {
			if set := h.subs[k]; set != nil {
				delete(set, s)
				if len(set) == 0 {
					delete(h.subs, k)
				}
			}
		}
	}
}
