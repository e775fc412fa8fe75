package route53

import (
	_ "embed"
	"strconv"
	"strings"
)

//go:embed regions.csv
var regionsCSV string

// regionCoords holds each AWS region's latitude and longitude, from regions.csv.
var regionCoords = parseRegions(regionsCSV)

func parseRegions(csv string) map[string][2]float64 {
	m := map[string][2]float64{}
	for _, l := range strings.Split(csv, "\n") {
		f := strings.Split(strings.TrimSpace(l), ",")
		if len(f) != 3 || strings.HasPrefix(f[0], "#") || f[0] == "region" {
			continue
		}
		lat, err1 := strconv.ParseFloat(f[1], 64)
		lon, err2 := strconv.ParseFloat(f[2], 64)
		if err1 != nil || err2 != nil {
			panic("route53: regions.csv: bad line " + strconv.Quote(l))
		}
		m[f[0]] = [2]float64{lat, lon}
	}
	return m
}

func ftoa(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }
