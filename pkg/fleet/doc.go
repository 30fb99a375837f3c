// Package fleet owns fleets of pointers: which pointers a fleet is, and
// the record of each fleet run. A release migrates every catalog of a
// deployment; each catalog has its pointer, and a fleet run runs each
// pointer's migration (or rollback) as a child execution of its own state
// machine (statemachine/fleet.asl.json), whose first and last steps are
// this package's.
//
//	discover.go  Discover: every pointer under a prefix, recognised by its content (not its name; a run's staging beside a pointer excluded), or listed one URL per line; members that cannot be read are named
//	list.go      List (the FleetList step): the fleet run's pointers, its record written, the canary and the rest, each with its child execution's input; Request, Item, Listed
//	report.go    Report (the FleetReport step): each pointer's outcome read from its own run's record (its trigger is the fleet run's), the record ended, the notice
//	failures.go  MayStart and CountFailure: the failure limit each item keeps (the Map tolerates every failure, so that none stops a running migration)
//	record.go    Run, Line, State: the record beside the fleet's first source (layout.FleetRun), its writes and reads (FindRun)
//	status.go    StatusOf: every pointer now (its format, its lock) beside its line in the latest fleet run
//	drift.go     CheckDrift: a drift check of every pointer, a few at a time within the step's time, and the one alert's text
//	errors.go    the fleet's named errors
//
// What runs a fleet run is elsewhere: the definition on AWS (infra/), or
// here under pkg/asl (pkg/localrun.RunFleet); a fleet's plan is
// pkg/operator's.
package fleet
