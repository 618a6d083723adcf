// TradeBridge NinjaScript add-on: the entry point NinjaTrader loads.
//
// The TradeBridge agent drives NinjaTrader 8 through this add-on. When
// NinjaTrader activates it, it listens on 127.0.0.1 on a port the system
// picks, writes the discovery file with that port and a new secret, and
// serves one agent at a time with the protocol of
// docs/ninjatrader-protocol.md. When NinjaTrader terminates it (closing, or
// recompiling NinjaScript), it says bye to the agent, stops, and deletes the
// discovery file. It prints what it does in the NinjaScript Output window,
// never the secret.
//
// Files: TradeBridgeAddOn.cs (this), TradeBridgeServer.cs (TCP, handshake,
// pings, events), TradeBridgePlatform.cs (the methods and NinjaTrader's
// events), TradeBridgeMapping.cs and TradeBridgeInstruments.cs (records),
// TradeBridgeWire.cs and TradeBridgeJson.cs (protocol rules, JSON),
// TradeBridgeDiscovery.cs (the discovery file).

using System;
using System.Diagnostics;

namespace NinjaTrader.NinjaScript.AddOns
{
	public class TradeBridgeAddOn : NinjaTrader.NinjaScript.AddOnBase
	{
		private static readonly object HostGate = new object();
		// One host per loaded NinjaScript assembly, whatever the number of add-on instances NinjaTrader makes.
		private static TradeBridgeHost host;
		private TradeBridgeHost mine;

		protected override void OnStateChange()
		{
			if (State == State.SetDefaults)
			{
				Name = "TradeBridge";
				Description = "Connects the TradeBridge agent to NinjaTrader.";
			}
			else if (State == State.Active)
			{
				lock (HostGate)
				{
					if (host != null)
						return;
					try
					{
						host = TradeBridgeHost.Start(TradeBridgeHostOptions.Defaults());
						mine = host;
					}
					catch (Exception e)
					{
						TradeBridgeHost.Print("could not start: " + e.GetType().Name + ": " + e.Message);
					}
				}
			}
			else if (State == State.Terminated)
			{
				TradeBridgeHost h;
				lock (HostGate)
				{
					if (mine == null || host != mine)
						return;
					h = mine;
					host = null;
					mine = null;
				}
				bool closing = false;
				try { closing = NinjaTrader.Core.Globals.IsApplicationExiting; }
				catch (Exception) { }
				h.Stop(closing ? TradeBridgeProtocol.ByePlatformClosing : TradeBridgeProtocol.ByeAddonStopping);
			}
		}
	}

	/// <summary>Options of the host. Defaults() gives the ones NinjaTrader runs with.</summary>
	public sealed class TradeBridgeHostOptions
	{
		/// <summary>Where the discovery file goes.</summary>
		public string DiscoveryPath;
		/// <summary>NinjaTrader's user folder, written into the discovery file for the agent.</summary>
		public string UserDataDir;
		/// <summary>The dispatcher requests run on: NinjaTrader's user interface.</summary>
		public System.Windows.Threading.Dispatcher Dispatcher;

		public static TradeBridgeHostOptions Defaults()
		{
			System.Windows.Threading.Dispatcher d = null;
			if (System.Windows.Application.Current != null)
				d = System.Windows.Application.Current.Dispatcher;
			if (d == null)
				d = NinjaTrader.Core.Globals.MainThreadDispatcher;
			return new TradeBridgeHostOptions
			{
				DiscoveryPath = TradeBridgeDiscovery.DefaultPath(),
				UserDataDir = NinjaTraderUserDataDir(),
				Dispatcher = d,
			};
		}

		// NinjaTrader's user folder ("Documents\NinjaTrader 8", wherever Windows keeps
		// the trader's Documents, OneDrive included), or null when NinjaTrader does not say.
		private static string NinjaTraderUserDataDir()
		{
			try { return NinjaTrader.Core.Globals.UserDataDir; }
			catch (Exception) { return null; }
		}

		public void Validate()
		{
			if (string.IsNullOrEmpty(DiscoveryPath))
				throw new ArgumentException("TradeBridgeHostOptions: a discovery path is required");
			if (Dispatcher == null)
				throw new ArgumentException("TradeBridgeHostOptions: NinjaTrader's dispatcher was not found");
		}
	}

	/// <summary>The running add-on: platform, server and discovery file.</summary>
	public sealed class TradeBridgeHost
	{
		private readonly TradeBridgeHostOptions opts;
		private readonly string secret;
		private TradeBridgePlatform platform;
		private TradeBridgeServer server;
		private bool stopped;

		private TradeBridgeHost(TradeBridgeHostOptions opts)
		{
			this.opts = opts;
			secret = TradeBridgeSecrets.NewSecret();
		}

		/// <summary>Prints a line in the NinjaScript Output window.</summary>
		public static void Print(string s)
		{
			try
			{
				NinjaTrader.Code.Output.Process("TradeBridge: " + s, PrintTo.OutputTab1);
			}
			catch (Exception)
			{
			}
		}

		/// <summary>Starts listening and writes the discovery file. Call on NinjaTrader's UI thread.</summary>
		public static TradeBridgeHost Start(TradeBridgeHostOptions opts)
		{
			opts.Validate();
			TradeBridgeHost h = new TradeBridgeHost(opts);
			try
			{
				h.platform = new TradeBridgePlatform(opts.Dispatcher, Print);
				h.server = new TradeBridgeServer(new TradeBridgeServerOptions
				{
					Secret = h.secret,
					Handler = h.platform,
					Log = Print,
				});
				h.platform.Attach(h.server);
				h.platform.Start();
				h.server.Start();
				Print("listening on 127.0.0.1:" + h.server.Port + " (session " + h.server.SessionId + ")");
				int pid;
				using (Process p = Process.GetCurrentProcess())
					pid = p.Id;
				TradeBridgeDiscovery.Write(opts.DiscoveryPath, h.server.Port, h.secret, pid, DateTime.UtcNow, opts.UserDataDir);
				Print("discovery file written: " + opts.DiscoveryPath);
				return h;
			}
			catch (Exception)
			{
				h.Stop(TradeBridgeProtocol.ByeAddonStopping);
				throw;
			}
		}

		/// <summary>Says bye with the reason, stops and deletes the discovery file. Idempotent.</summary>
		public void Stop(string byeReason)
		{
			if (stopped)
				return;
			stopped = true;
			TradeBridgeDiscovery.DeleteIfOurs(opts.DiscoveryPath, secret);
			if (server != null)
				server.Close(byeReason);
			if (platform != null)
				platform.Stop();
			Print("stopped");
		}
	}
}
