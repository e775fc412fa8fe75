package control

import (
	"fmt"
	"slices"
	"time"
)

// MaxShiftExpiry is the longest a zonal shift lasts, as AWS limits it (3 days).
const MaxShiftExpiry = 72 * time.Hour

// MaxShifts is how many zonal shifts the state keeps, newest last: the active
// ones and the most recent ended ones.
const MaxShifts = 1000

// Codes of refused zonal shift commands (Refusal.Code), ARC's own.
const (
	CodeShiftExists    = "ZonalShiftAlreadyExists"   // the resource has an active shift already
	CodeShiftNotActive = "ZonalShiftStatusNotActive" // the shift expired or was cancelled
	CodeNoSuchShift    = "ResourceNotFoundException"
)

// ZonalShift moves a managed resource's answers away from one Availability Zone
// from Start until Expiry (both the leader's clock) or until cancelled.
type ZonalShift struct {
	ID       string    `json:"id"`
	Resource string    `json:"resource"`  // the managed resource's identifier
	AwayFrom string    `json:"away_from"` // the AZ ID answers move away from
	Comment  string    `json:"comment"`
	Start    time.Time `json:"start"`
	Expiry   time.Time `json:"expiry"`
	Canceled bool      `json:"canceled,omitempty"`
}

// Shift statuses, as ARC names them.
const (
	ShiftActive   = "ACTIVE"
	ShiftExpired  = "EXPIRED"
	ShiftCanceled = "CANCELED"
)

// Status returns the shift's status at now.
func (z ZonalShift) Status(now time.Time) string {
	switch {
	case z.Canceled:
		return ShiftCanceled
	case !now.Before(z.Expiry):
		return ShiftExpired
	}
	return ShiftActive
}

// ShiftCommand starts, updates or cancels a zonal shift. Exactly one of Start,
// Update and Cancel is set.
type ShiftCommand struct {
	Start     *ZonalShift   `json:"start,omitempty"`      // Start and Expiry are set from the command's time and ExpiresIn
	Update    string        `json:"update,omitempty"`     // the ID of the shift to update
	Cancel    string        `json:"cancel,omitempty"`     // the ID of the shift to cancel
	ExpiresIn time.Duration `json:"expires_in,omitempty"` // start, update: the expiry from the command's time; 0 keeps it (update)
	Comment   *string       `json:"comment,omitempty"`    // update: the new comment; nil keeps it
}

// ActiveShifts returns the shifts active at now.
func (s *State) ActiveShifts(now time.Time) []ZonalShift {
	var out []ZonalShift
	for _, z := range s.Shifts {
		if z.Status(now) == ShiftActive {
			out = append(out, z)
		}
	}
	return out
}

// Shift returns the shift of id, and whether the state knows it.
func (s *State) Shift(id string) (ZonalShift, bool) {
	i := slices.IndexFunc(s.Shifts, func(z ZonalShift) bool { return z.ID == id })
	if i < 0 {
		return ZonalShift{}, false
	}
	return s.Shifts[i], true
}

// applyShift decides a zonal shift command at the leader's time cmd.Time.
func (s *State) applyShift(cmd *Command) error {
	c, now := cmd.Shift, cmd.Time
	if (c.Start != nil || c.ExpiresIn != 0) && (c.ExpiresIn <= 0 || c.ExpiresIn > MaxShiftExpiry) {
		return apiRefusal(CodeInvalidInput, "expiresIn %s: expected 1 minute to %s", c.ExpiresIn, MaxShiftExpiry)
	}
	switch {
	case c.Start != nil:
		for _, z := range s.Shifts {
			if z.Resource == c.Start.Resource && z.Status(now) == ShiftActive {
				return &Refusal{Code: CodeShiftExists, Reason: fmt.Sprintf("the resource %s has an active zonal shift already (%s, away from %s)", z.Resource, z.ID, z.AwayFrom), Messages: []string{z.ID}}
			}
			if z.ID == c.Start.ID {
				return apiRefusal(CodeShiftExists, "zonal shift %s exists already", z.ID)
			}
		}
		z := *c.Start
		z.Start, z.Expiry, z.Canceled = now, now.Add(c.ExpiresIn), false
		s.Shifts = append(slices.Clone(s.Shifts), z)
		if n := len(s.Shifts) - MaxShifts; n > 0 {
			s.Shifts = slices.Delete(s.Shifts, 0, n)
		}
		return nil
	case c.Update != "" || c.Cancel != "":
		id := c.Update + c.Cancel
		i := slices.IndexFunc(s.Shifts, func(z ZonalShift) bool { return z.ID == id })
		if i < 0 {
			return apiRefusal(CodeNoSuchShift, "no zonal shift with ID %s", id)
		}
		z := s.Shifts[i]
		if st := z.Status(now); st != ShiftActive {
			return &Refusal{Code: CodeShiftNotActive, Reason: fmt.Sprintf("zonal shift %s is %s, not ACTIVE", id, st), Messages: []string{id}}
		}
		if c.Cancel != "" {
			z.Canceled = true
		}
		if c.ExpiresIn != 0 {
			z.Expiry = now.Add(c.ExpiresIn)
		}
		if c.Comment != nil {
			z.Comment = *c.Comment
		}
		s.Shifts = slices.Clone(s.Shifts)
		s.Shifts[i] = z
		return nil
	}
	return apiRefusal(CodeInvalidInput, "a zonal shift command that changes nothing")
}
