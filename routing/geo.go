package routing

import (
	_ "embed"
	"fmt"
	"math"
	"strings"
)

//go:embed continents.txt
var continentData string

// ContinentOf maps an ISO 3166-1 country code to its continent code; loaded from
// continents.txt, so the mapping is data that can be corrected without code changes.
var ContinentOf = mustContinents(continentData)

// Continents is the set of continent codes a geolocation record may name.
var Continents = map[string]bool{"AF": true, "AN": true, "AS": true, "EU": true, "NA": true, "OC": true, "SA": true}

func mustContinents(data string) map[string]string {
	m, err := parseContinents(data)
	if err != nil {
		panic(err)
	}
	return m
}

func parseContinents(data string) (map[string]string, error) {
	m := map[string]string{}
	for i, line := range strings.Split(data, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' {
			continue
		}
		cont, countries, ok := strings.Cut(line, ":")
		if !ok || !Continents[cont] {
			return nil, fmt.Errorf("continents.txt:%d: expected CONTINENT: COUNTRY...", i+1)
		}
		for _, c := range strings.Fields(countries) {
			if prev, dup := m[c]; dup {
				return nil, fmt.Errorf("continents.txt:%d: %s is in %s already", i+1, c, prev)
			}
			m[c] = cont
		}
	}
	return m, nil
}

// ClientLocation is what is known of where a client is: from the geoip plugin's metadata.
// The zero value is an unknown location.
type ClientLocation struct {
	Country      string // ISO 3166-1 alpha-2, upper case
	Continent    string // AF, AN, AS, EU, NA, OC, SA
	Subdivisions string // ISO 3166-2 subdivision codes without the country, comma-separated
	Lat, Lon     float64
	HasCoords    bool
}

// continent returns the client's continent: the geoip value, else the mapping's.
func (l *ClientLocation) continent() string {
	if l.Continent != "" {
		return l.Continent
	}
	return ContinentOf[l.Country]
}

// inSubdivision reports whether the client is in subdivision code (e.g. "CA" of US).
func (l *ClientLocation) inSubdivision(code string) bool {
	for s := l.Subdivisions; s != ""; {
		var cur string
		cur, s, _ = strings.Cut(s, ",")
		if cur == code {
			return true
		}
	}
	return false
}

const earthRadiusKm = 6371.0

// haversine returns the great-circle distance in km between two points in degrees.
func haversine(lat1, lon1, lat2, lon2 float64) float64 {
	const rad = math.Pi / 180
	dLat, dLon := (lat2-lat1)*rad, (lon2-lon1)*rad
	a := math.Sin(dLat/2)*math.Sin(dLat/2) +
		math.Cos(lat1*rad)*math.Cos(lat2*rad)*math.Sin(dLon/2)*math.Sin(dLon/2)
	return 2 * earthRadiusKm * math.Asin(math.Min(1, math.Sqrt(a)))
}

// biased applies a geoproximity bias (-99..99) to a distance, as Route 53 does:
// positive bias shrinks it by bias%, negative bias divides by (1 + bias/100), so
// -50 doubles it (docs/routing.md#geoproximity).
func biased(d float64, bias int) float64 {
	if bias >= 0 {
		return d * (1 - float64(bias)/100)
	}
	return d / (1 + float64(bias)/100)
}

// Truncate2 truncates a coordinate to two decimal places, as Route 53 does.
func Truncate2(x float64) float64 { return math.Trunc(x*100) / 100 }
