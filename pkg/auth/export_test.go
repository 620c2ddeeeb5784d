package auth

import "time"

// SetClock makes l read the time from now.
func (l *SharedLimiter) SetClock(now func() time.Time) { l.now = now }
