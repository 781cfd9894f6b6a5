package main

import (
	"strings"
	"testing"
)

const flowMetrics = `# TYPE apiserver_flowcontrol_dispatched_requests_total counter
apiserver_flowcontrol_dispatched_requests_total{flow_schema="node-lifecycle-marks",priority_level="node-lifecycle-marks"} 100
apiserver_flowcontrol_dispatched_requests_total{flow_schema="node-lifecycle-controller",priority_level="workload-high"} 1000
apiserver_flowcontrol_dispatched_requests_total{flow_schema="exempt",priority_level="exempt"} 5000
apiserver_flowcontrol_dispatched_requests_total{flow_schema="probes",priority_level="exempt"} 7
# TYPE apiserver_flowcontrol_rejected_requests_total counter
apiserver_flowcontrol_rejected_requests_total{flow_schema="node-lifecycle-controller",priority_level="workload-high",reason="queue-full"} 3
# TYPE apiserver_flowcontrol_request_wait_duration_seconds histogram
apiserver_flowcontrol_request_wait_duration_seconds_bucket{execute="true",flow_schema="node-lifecycle-marks",priority_level="node-lifecycle-marks",le="0"} 100
apiserver_flowcontrol_request_wait_duration_seconds_bucket{execute="true",flow_schema="node-lifecycle-marks",priority_level="node-lifecycle-marks",le="0.005"} 100
apiserver_flowcontrol_request_wait_duration_seconds_bucket{execute="true",flow_schema="node-lifecycle-marks",priority_level="node-lifecycle-marks",le="+Inf"} 100
apiserver_flowcontrol_request_wait_duration_seconds_sum{execute="true",flow_schema="node-lifecycle-marks",priority_level="node-lifecycle-marks"} 0
apiserver_flowcontrol_request_wait_duration_seconds_count{execute="true",flow_schema="node-lifecycle-marks",priority_level="node-lifecycle-marks"} 100
apiserver_flowcontrol_request_wait_duration_seconds_bucket{execute="true",flow_schema="node-lifecycle-controller",priority_level="workload-high",le="0"} 500
apiserver_flowcontrol_request_wait_duration_seconds_bucket{execute="true",flow_schema="node-lifecycle-controller",priority_level="workload-high",le="0.5"} 985
apiserver_flowcontrol_request_wait_duration_seconds_bucket{execute="true",flow_schema="node-lifecycle-controller",priority_level="workload-high",le="1"} 995
apiserver_flowcontrol_request_wait_duration_seconds_bucket{execute="true",flow_schema="node-lifecycle-controller",priority_level="workload-high",le="2"} 1000
apiserver_flowcontrol_request_wait_duration_seconds_bucket{execute="true",flow_schema="node-lifecycle-controller",priority_level="workload-high",le="+Inf"} 1000
apiserver_flowcontrol_request_wait_duration_seconds_sum{execute="true",flow_schema="node-lifecycle-controller",priority_level="workload-high"} 150
apiserver_flowcontrol_request_wait_duration_seconds_count{execute="true",flow_schema="node-lifecycle-controller",priority_level="workload-high"} 1000
apiserver_flowcontrol_request_wait_duration_seconds_bucket{execute="false",flow_schema="node-lifecycle-controller",priority_level="workload-high",le="+Inf"} 3
apiserver_flowcontrol_request_wait_duration_seconds_sum{execute="false",flow_schema="node-lifecycle-controller",priority_level="workload-high"} 90
apiserver_flowcontrol_request_wait_duration_seconds_count{execute="false",flow_schema="node-lifecycle-controller",priority_level="workload-high"} 3
`

func TestFlowControlIsSummedByFlowSchema(t *testing.T) {
	snap, err := parseFlowControl([]byte(flowMetrics))
	if err != nil {
		t.Fatal(err)
	}
	uses := snap.since(nil)
	want := []flowUse{
		{FlowSchema: "node-lifecycle-controller", PriorityLevel: "workload-high", Dispatched: 1000, Rejected: 3, WaitMean: 0.15, WaitP99: "1", WaitMax: "2"},
		{FlowSchema: "node-lifecycle-marks", PriorityLevel: "node-lifecycle-marks", Dispatched: 100, WaitMean: 0, WaitP99: "0", WaitMax: "0"},
	}
	if len(uses) != len(want) {
		t.Fatalf("Got %+v, want %+v: the exempt level left out", uses, want)
	}
	for i := range want {
		if uses[i] != want[i] {
			t.Errorf("Flow %d: got %+v, want %+v", i, uses[i], want[i])
		}
	}
	table := flowTable([]*turn{{Name: "ours", Round: 1, FlowControl: uses}})
	if !strings.Contains(table, "| node-lifecycle-marks | node-lifecycle-marks | 100 | 0 | 0.0000 | 0 | 0 |") {
		t.Errorf("Table:\n%s", table)
	}
}

// Counts between two scrapes are the later less the earlier, and flow
// schemas that sent nothing between them are left out.
func TestFlowControlBetweenTwoScrapes(t *testing.T) {
	before, err := parseFlowControl([]byte(strings.NewReplacer(
		`{flow_schema="node-lifecycle-marks",priority_level="node-lifecycle-marks"} 100`, `{flow_schema="node-lifecycle-marks",priority_level="node-lifecycle-marks"} 100`,
		`priority_level="workload-high"} 1000`, `priority_level="workload-high"} 900`,
		`le="0"} 500`, `le="0"} 500`,
		`le="0.5"} 985`, `le="0.5"} 885`,
		`le="1"} 995`, `le="1"} 895`,
		`le="2"} 1000`, `le="2"} 900`,
		`le="+Inf"} 1000`, `le="+Inf"} 900`,
		`priority_level="workload-high"} 150`, `priority_level="workload-high"} 100`,
		`count{execute="true",flow_schema="node-lifecycle-controller",priority_level="workload-high"} 1000`, `count{execute="true",flow_schema="node-lifecycle-controller",priority_level="workload-high"} 900`,
	).Replace(flowMetrics)))
	if err != nil {
		t.Fatal(err)
	}
	after, err := parseFlowControl([]byte(flowMetrics))
	if err != nil {
		t.Fatal(err)
	}
	uses := after.since(before)
	want := flowUse{FlowSchema: "node-lifecycle-controller", PriorityLevel: "workload-high", Dispatched: 100, Rejected: 0, WaitMean: 0.5, WaitP99: "0.5", WaitMax: "0.5"}
	if len(uses) != 1 || uses[0] != want {
		t.Fatalf("Got %+v, want %+v alone: the marks sent nothing between the scrapes", uses, want)
	}
}
