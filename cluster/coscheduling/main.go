// The tier's gang scheduler: the upstream kube-scheduler (k8s.io/kubernetes at the
// release scheduler-plugins pins) with the scheduler-plugins Coscheduling plugin added,
// so one profile can hold a PodGroup's pods at Permit until minMember of them fit.
package main

import (
	"os"

	"k8s.io/component-base/cli"
	"k8s.io/kubernetes/cmd/kube-scheduler/app"

	// CoschedulingArgs in a KubeSchedulerConfiguration decode only with this scheme loaded
	_ "sigs.k8s.io/scheduler-plugins/apis/config/scheme"
	"sigs.k8s.io/scheduler-plugins/pkg/coscheduling"
)

func main() {
	cmd := app.NewSchedulerCommand(app.WithPlugin(coscheduling.Name, coscheduling.New))
	os.Exit(cli.Run(cmd))
}
