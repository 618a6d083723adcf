package main

import (
	"os"

	"golang.org/x/sys/windows"

	"tradebridge/agent/winsvc"
)

const (
	machineReaders = "SYSTEM and the Administrators"
	elevatedPrompt = "an elevated prompt (Run as administrator)"
)

// machineSDDL gives the machine's configuration folder and file to SYSTEM
// and the Administrators alone (owner: the Administrators; a protected
// DACL, so nothing is inherited from ProgramData, where users may read).
const machineSDDL = winsvc.AgentSDDL

// checkWriter refuses to write the machine's configuration from a prompt
// that is not elevated: ProgramData lets users create folders, and a
// folder a user created stays theirs to open.
func checkWriter(machine bool) error {
	if !machine || windows.GetCurrentProcessToken().IsElevated() {
		return nil
	}
	admins, err := windows.CreateWellKnownSid(windows.WinBuiltinAdministratorsSid)
	if err == nil {
		if member, err := windows.Token(0).IsMember(admins); err == nil && member {
			return nil
		}
	}
	return os.ErrPermission
}

// secureDir gives the machine's configuration folder to SYSTEM and the
// Administrators; another folder keeps the permissions of its parent
// (the user's profile).
func secureDir(dir string, machine bool) error {
	if !machine {
		return nil
	}
	return restrict(dir)
}

// secureFile gives the machine's configuration file to SYSTEM and the
// Administrators.
func secureFile(file string, machine bool) error {
	if !machine {
		return nil
	}
	return restrict(file)
}

func restrict(path string) error {
	sd, err := windows.SecurityDescriptorFromString(machineSDDL)
	if err != nil {
		return err
	}
	dacl, _, err := sd.DACL()
	if err != nil {
		return err
	}
	owner, _, err := sd.Owner()
	if err != nil {
		return err
	}
	return windows.SetNamedSecurityInfo(path, windows.SE_FILE_OBJECT,
		windows.OWNER_SECURITY_INFORMATION|windows.DACL_SECURITY_INFORMATION|windows.PROTECTED_DACL_SECURITY_INFORMATION,
		owner, nil, dacl, nil)
}
