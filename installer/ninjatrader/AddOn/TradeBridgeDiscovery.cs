// TradeBridge NinjaScript add-on: the discovery file, which tells the agent
// where the add-on listens and which secret to present
// (docs/ninjatrader-protocol.md, "Finding the add-on").
//
// The file is written under a temporary name in its folder and renamed, so a
// reader never sees half of it. On Windows the temporary file is created with
// an access list that lets only the current user, Administrators and SYSTEM
// read it, before the secret is written into it.
//
// This file uses only the .NET base library: the self-test compiles it
// outside NinjaTrader.

using System;
using System.Collections.Generic;
using System.IO;
using System.Security.AccessControl;
using System.Security.Principal;
using System.Text;

namespace NinjaTrader.NinjaScript.AddOns
{
	public static class TradeBridgeDiscovery
	{
		private static readonly UTF8Encoding Utf8 = new UTF8Encoding(false);

		public static bool IsWindows
		{
			get { return Environment.OSVersion.Platform == PlatformID.Win32NT; }
		}

		/// <summary>
		/// %LOCALAPPDATA%\TradeBridge\ninjatrader-addon.json on Windows: the trader's
		/// own profile, which other users cannot write (the agent's service finds it
		/// through NinjaTrader's process and checks who owns it); elsewhere the file
		/// in the user's configuration folder.
		/// </summary>
		public static string DefaultPath()
		{
			if (IsWindows)
				return Path.Combine(Path.Combine(Environment.GetFolderPath(Environment.SpecialFolder.LocalApplicationData),
					"TradeBridge"), TradeBridgeProtocol.DiscoveryFileName);
			string dir = Environment.GetEnvironmentVariable("XDG_CONFIG_HOME");
			if (string.IsNullOrEmpty(dir))
				dir = Path.Combine(Environment.GetFolderPath(Environment.SpecialFolder.UserProfile), ".config");
			return Path.Combine(dir, TradeBridgeProtocol.DiscoveryFileName);
		}

		/// <summary>
		/// The file's content; userDataDir is NinjaTrader's user folder
		/// (NinjaTrader.Core.Globals.UserDataDir), left out when unknown.
		/// </summary>
		public static string Content(int port, string secret, int pid, DateTime startedUtc, string userDataDir)
		{
			TradeBridgeJsonWriter w = new TradeBridgeJsonWriter();
			w.BeginObject()
				.Prop("version", TradeBridgeProtocol.Version)
				.Prop("port", port)
				.Prop("secret", secret)
				.Prop("pid", pid)
				.Prop("addonVersion", TradeBridgeProtocol.AddonVersion)
				.Prop("startedAt", TradeBridgeTime.Format(startedUtc));
			if (!string.IsNullOrEmpty(userDataDir))
				w.Prop("userDataDir", userDataDir.TrimEnd('\\', '/'));
			w.EndObject();
			return w.ToString();
		}

		/// <summary>Writes the file at path: temporary name, access list, content, rename.</summary>
		public static void Write(string path, int port, string secret, int pid, DateTime startedUtc, string userDataDir)
		{
			string dir = Path.GetDirectoryName(Path.GetFullPath(path));
			PrepareDirectory(dir);
			string tmp = Path.Combine(dir, "." + Path.GetFileName(path) + "." + TradeBridgeSecrets.NewSessionId() + ".tmp");
			byte[] content = Utf8.GetBytes(Content(port, secret, pid, startedUtc, userDataDir) + "\n");
			try
			{
				using (FileStream f = CreatePrivate(tmp))
				{
					f.Write(content, 0, content.Length);
					f.Flush(true);
				}
				if (File.Exists(path))
					File.Delete(path); // File.Replace would merge the old file's access list into the new one
				File.Move(tmp, path);
			}
			catch
			{
				try { File.Delete(tmp); } catch { }
				throw;
			}
		}

		// Creates the folder, on Windows readable by the current user, Administrators and
		// SYSTEM only; an existing folder must belong to one of them, or another user
		// could replace the file with one that points the agent elsewhere.
		private static void PrepareDirectory(string dir)
		{
			if (!IsWindows)
			{
				Directory.CreateDirectory(dir);
				return;
			}
			if (Directory.Exists(dir))
			{
				SecurityIdentifier owner = Directory.GetAccessControl(dir, AccessControlSections.Owner)
					.GetOwner(typeof(SecurityIdentifier)) as SecurityIdentifier;
				if (owner == null || !(owner.Equals(WindowsIdentity.GetCurrent().User) ||
					owner.IsWellKnown(WellKnownSidType.BuiltinAdministratorsSid) || owner.IsWellKnown(WellKnownSidType.LocalSystemSid)))
					throw new UnauthorizedAccessException("the discovery folder belongs to another user");
				return;
			}
			DirectorySecurity sec = new DirectorySecurity();
			sec.SetAccessRuleProtection(true, false);
			foreach (SecurityIdentifier sid in Trusted())
				sec.AddAccessRule(new FileSystemAccessRule(sid, FileSystemRights.FullControl,
					InheritanceFlags.ContainerInherit | InheritanceFlags.ObjectInherit, PropagationFlags.None, AccessControlType.Allow));
			Directory.CreateDirectory(dir, sec);
		}

		private static SecurityIdentifier[] Trusted()
		{
			return new[]
			{
				WindowsIdentity.GetCurrent().User,
				new SecurityIdentifier(WellKnownSidType.BuiltinAdministratorsSid, null),
				new SecurityIdentifier(WellKnownSidType.LocalSystemSid, null),
			};
		}

		// Creates an empty file that only its owner (and, on Windows, Administrators and SYSTEM) can read.
		private static FileStream CreatePrivate(string path)
		{
			if (!IsWindows)
				return new FileStream(path, FileMode.CreateNew, FileAccess.Write, FileShare.None);
			FileSecurity sec = new FileSecurity();
			sec.SetAccessRuleProtection(true, false); // no inherited entries
			sec.SetOwner(WindowsIdentity.GetCurrent().User);
			foreach (SecurityIdentifier sid in Trusted())
				sec.AddAccessRule(new FileSystemAccessRule(sid, FileSystemRights.FullControl, AccessControlType.Allow));
			// The access list is part of the creation, so the file never exists without it.
			return new FileStream(path, FileMode.CreateNew, FileSystemRights.Write | FileSystemRights.ReadPermissions,
				FileShare.None, 4096, FileOptions.None, sec);
		}

		/// <summary>Deletes the file at path if it is still the one this run wrote (it holds secret).</summary>
		public static bool DeleteIfOurs(string path, string secret)
		{
			try
			{
				if (!File.Exists(path))
					return false;
				string text = File.ReadAllText(path, Utf8);
				Dictionary<string, object> d = TradeBridgeJsonReader.Parse(text.Trim()) as Dictionary<string, object>;
				object s;
				if (d == null || !d.TryGetValue("secret", out s) || !TradeBridgeSecrets.ConstantTimeEquals(s as string, secret))
					return false;
				File.Delete(path);
				return true;
			}
			catch (Exception)
			{
				return false;
			}
		}
	}
}
