package route53

// PolicyRecordSets returns the record sets the policy records of in make from
// their documents (in.TrafficPolicies), each with its policy record's Id as
// TrafficPolicyInstanceId, as Route 53 lists a traffic policy instance's record
// sets; in.RecordSets are not read.
func PolicyRecordSets(in Input) ([]ResourceRecordSet, error) {
	var out []ResourceRecordSet
	for _, pr := range in.PolicyRecords {
		one := in
		one.PolicyRecords = []PolicyRecord{pr}
		sets, _, _, err := policyRecordSets(&one)
		if err != nil {
			return nil, err
		}
		for i := range sets {
			sets[i].TrafficPolicyInstanceId = pr.Id
		}
		out = append(out, sets...)
	}
	return out, nil
}
