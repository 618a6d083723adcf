package winsvc

// Folder is one of the machine's folders and the security descriptor
// (SDDL) it is given on Windows.
type Folder struct {
	Path string
	SDDL string
}

// MachineFolders are the machine's folders in the order they are
// created, each before what it holds: the root (%ProgramData%\TradeBridge
// on Windows), the agent's folder (its configuration file), its data and
// its logs.
func MachineFolders(p Paths) []Folder {
	return []Folder{
		{Path: p.Root, SDDL: RootSDDL},
		{Path: p.Dir, SDDL: AgentSDDL},
		{Path: p.DataDir, SDDL: AgentSDDL},
		{Path: p.LogDir, SDDL: AgentSDDL},
	}
}
