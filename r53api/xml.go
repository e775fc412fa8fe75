package r53api

import (
	"encoding/xml"

	"github.com/healthroute/healthroute/route53"
)

// Namespace is the XML namespace of Route 53's API version 2013-04-01.
const Namespace = "https://route53.amazonaws.com/doc/2013-04-01/"

// The request and response documents, as Route 53's API reference gives them. The
// record sets and health checks are the importer's own types (package route53),
// which carry the XML element names too: what the API reads is what the importer
// converts.

type hostedZone struct {
	Id                     string
	Name                   string
	CallerReference        string
	Config                 zoneConfig
	ResourceRecordSetCount int64
}

type zoneConfig struct {
	Comment     string `xml:",omitempty"`
	PrivateZone bool
}

type delegationSet struct {
	NameServers []string `xml:"NameServers>NameServer"`
}

type getHostedZoneResponse struct {
	XMLName       xml.Name `xml:"GetHostedZoneResponse"`
	Xmlns         string   `xml:"xmlns,attr"`
	HostedZone    hostedZone
	DelegationSet *delegationSet `xml:",omitempty"`
}

type listHostedZonesResponse struct {
	XMLName     xml.Name     `xml:"ListHostedZonesResponse"`
	Xmlns       string       `xml:"xmlns,attr"`
	HostedZones []hostedZone `xml:"HostedZones>HostedZone"`
	Marker      string
	IsTruncated bool
	NextMarker  string `xml:",omitempty"`
	MaxItems    string
}

type listHostedZonesByNameResponse struct {
	XMLName          xml.Name     `xml:"ListHostedZonesByNameResponse"`
	Xmlns            string       `xml:"xmlns,attr"`
	HostedZones      []hostedZone `xml:"HostedZones>HostedZone"`
	DNSName          string       `xml:",omitempty"`
	HostedZoneId     string       `xml:",omitempty"`
	IsTruncated      bool
	NextDNSName      string `xml:",omitempty"`
	NextHostedZoneId string `xml:",omitempty"`
	MaxItems         string
}

type listResourceRecordSetsResponse struct {
	XMLName              xml.Name                    `xml:"ListResourceRecordSetsResponse"`
	Xmlns                string                      `xml:"xmlns,attr"`
	ResourceRecordSets   []route53.ResourceRecordSet `xml:"ResourceRecordSets>ResourceRecordSet"`
	IsTruncated          bool
	NextRecordName       string `xml:",omitempty"`
	NextRecordType       string `xml:",omitempty"`
	NextRecordIdentifier string `xml:",omitempty"`
	MaxItems             string
}

type changeResourceRecordSetsRequest struct {
	XMLName     xml.Name `xml:"ChangeResourceRecordSetsRequest"`
	ChangeBatch struct {
		Comment string
		Changes []struct {
			Action            string
			ResourceRecordSet *route53.ResourceRecordSet
		} `xml:"Changes>Change"`
	}
}

type changeInfo struct {
	Id          string
	Status      string
	SubmittedAt string
	Comment     string `xml:",omitempty"`
}

type changeResourceRecordSetsResponse struct {
	XMLName    xml.Name `xml:"ChangeResourceRecordSetsResponse"`
	Xmlns      string   `xml:"xmlns,attr"`
	ChangeInfo changeInfo
}

type getChangeResponse struct {
	XMLName    xml.Name `xml:"GetChangeResponse"`
	Xmlns      string   `xml:"xmlns,attr"`
	ChangeInfo changeInfo
}

// healthCheckXML is a health check as the API returns it.
type healthCheckXML struct {
	Id                 string
	CallerReference    string
	HealthCheckConfig  route53.HealthCheckConfig
	HealthCheckVersion int64
}

type createHealthCheckRequest struct {
	XMLName           xml.Name `xml:"CreateHealthCheckRequest"`
	CallerReference   string
	HealthCheckConfig *route53.HealthCheckConfig
}

type createHealthCheckResponse struct {
	XMLName     xml.Name `xml:"CreateHealthCheckResponse"`
	Xmlns       string   `xml:"xmlns,attr"`
	HealthCheck healthCheckXML
}

type getHealthCheckResponse struct {
	XMLName     xml.Name `xml:"GetHealthCheckResponse"`
	Xmlns       string   `xml:"xmlns,attr"`
	HealthCheck healthCheckXML
}

type updateHealthCheckResponse struct {
	XMLName     xml.Name `xml:"UpdateHealthCheckResponse"`
	Xmlns       string   `xml:"xmlns,attr"`
	HealthCheck healthCheckXML
}

type listHealthChecksResponse struct {
	XMLName      xml.Name         `xml:"ListHealthChecksResponse"`
	Xmlns        string           `xml:"xmlns,attr"`
	HealthChecks []healthCheckXML `xml:"HealthChecks>HealthCheck"`
	Marker       string
	IsTruncated  bool
	NextMarker   string `xml:",omitempty"`
	MaxItems     string
}

// updateHealthCheckRequest holds the fields UpdateHealthCheck may change; a
// field left out keeps its value.
type updateHealthCheckRequest struct {
	XMLName                      xml.Name `xml:"UpdateHealthCheckRequest"`
	HealthCheckVersion           *int64
	IPAddress                    *string
	Port                         *int64
	ResourcePath                 *string
	FullyQualifiedDomainName     *string
	SearchString                 *string
	FailureThreshold             *int64
	Inverted                     *bool
	Disabled                     *bool
	HealthThreshold              *int64
	ChildHealthChecks            *[]string `xml:"ChildHealthChecks>ChildHealthCheck"`
	EnableSNI                    *bool
	Regions                      *[]string `xml:"Regions>Region"`
	InsufficientDataHealthStatus *string
	ResetElements                []string `xml:"ResetElements>ResettableElementName"`
}

type deleteHealthCheckResponse struct {
	XMLName xml.Name `xml:"DeleteHealthCheckResponse"`
	Xmlns   string   `xml:"xmlns,attr"`
}

type healthCheckObservation struct {
	Region       string
	IPAddress    string
	StatusReport statusReport
}

type statusReport struct {
	Status      string
	CheckedTime string
}

type getHealthCheckStatusResponse struct {
	XMLName                 xml.Name                 `xml:"GetHealthCheckStatusResponse"`
	Xmlns                   string                   `xml:"xmlns,attr"`
	HealthCheckObservations []healthCheckObservation `xml:"HealthCheckObservations>HealthCheckObservation"`
}

type tag struct {
	Key   string
	Value string
}

type changeTagsForResourceRequest struct {
	XMLName       xml.Name `xml:"ChangeTagsForResourceRequest"`
	AddTags       []tag    `xml:"AddTags>Tag"`
	RemoveTagKeys []string `xml:"RemoveTagKeys>Key"`
}

type changeTagsForResourceResponse struct {
	XMLName xml.Name `xml:"ChangeTagsForResourceResponse"`
	Xmlns   string   `xml:"xmlns,attr"`
}

type resourceTagSet struct {
	ResourceType string
	ResourceId   string
	Tags         []tag `xml:"Tags>Tag"`
}

type listTagsForResourceResponse struct {
	XMLName        xml.Name `xml:"ListTagsForResourceResponse"`
	Xmlns          string   `xml:"xmlns,attr"`
	ResourceTagSet resourceTagSet
}

type listTagsForResourcesRequest struct {
	XMLName     xml.Name `xml:"ListTagsForResourcesRequest"`
	ResourceIds []string `xml:"ResourceIds>ResourceId"`
}

type listTagsForResourcesResponse struct {
	XMLName         xml.Name         `xml:"ListTagsForResourcesResponse"`
	Xmlns           string           `xml:"xmlns,attr"`
	ResourceTagSets []resourceTagSet `xml:"ResourceTagSets>ResourceTagSet"`
}

// errorResponse is Route 53's error document.
type errorResponse struct {
	XMLName   xml.Name `xml:"ErrorResponse"`
	Xmlns     string   `xml:"xmlns,attr"`
	Error     errorBody
	RequestId string
}

type errorBody struct {
	Type    string
	Code    string
	Message string
}

type getHostedZoneCountResponse struct {
	XMLName         xml.Name `xml:"GetHostedZoneCountResponse"`
	Xmlns           string   `xml:"xmlns,attr"`
	HostedZoneCount int64
}

type getHealthCheckCountResponse struct {
	XMLName          xml.Name `xml:"GetHealthCheckCountResponse"`
	Xmlns            string   `xml:"xmlns,attr"`
	HealthCheckCount int64
}
