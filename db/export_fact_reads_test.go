package db

// FactReadsQueued is how many checks of tools known to ask wait for the
// next group read with their facts.
func (d *DB) FactReadsQueued() int {
	d.factReads.mu.Lock()
	defer d.factReads.mu.Unlock()
	return len(d.factReads.queue)
}

// SetMaxFactReaders sets how many group reads with the facts may be in
// flight at once.
func (d *DB) SetMaxFactReaders(n int) { d.factReads.max = n }
