// Stand-ins for NinjaTrader 8's NinjaTrader.NinjaScript, NinjaTrader.Core
// and NinjaTrader.Code types that the TradeBridge add-on uses, so that it
// compiles with Mono outside NinjaTrader. These are NOT NinjaTrader's
// declarations: they follow NinjaTrader's public NinjaScript documentation,
// and their bodies do nothing or throw. They are never shipped; see
// README.md beside this file.

using System;
using NinjaTrader.Cbi;

namespace NinjaTrader.NinjaScript
{
	public enum State { SetDefaults, Configure, Active, DataLoaded, Historical, Transition, Realtime, Terminated, Finalized }

	public enum PrintTo { OutputTab1, OutputTab2 }

	public abstract class NinjaScriptBase
	{
		public string Description { get; set; }
		public string Name { get; set; }
		public State State { get; protected set; }

		protected virtual void OnStateChange() { }
	}

	public abstract class AddOnBase : NinjaScriptBase { }

	public class StrategyBase : NinjaScriptBase
	{
		public Account Account { get; set; }
		public long Id { get; set; }
		public Instrument[] Instruments { get; set; }
		public Position Position { get; set; }
		public string Template { get; set; }
	}

	public class AtmStrategy : StrategyBase
	{
		public static AtmStrategy StartAtmStrategy(string atmStrategyTemplateName, Order entryOrder) { throw new NotImplementedException(); }
		public static AtmStrategy StartAtmStrategy(AtmStrategy atmStrategyTemplate, Order entryOrder) { throw new NotImplementedException(); }
	}
}

namespace NinjaTrader.Core
{
	public static class Globals
	{
		public static readonly DateTime MaxDate = new DateTime(2099, 12, 1);

		public static bool IsApplicationExiting { get { throw new NotImplementedException(); } }
		public static System.Windows.Threading.Dispatcher MainThreadDispatcher { get { throw new NotImplementedException(); } }
		public static DateTime Now { get { throw new NotImplementedException(); } }
		public static string ProductVersion { get { throw new NotImplementedException(); } }
		public static string UserDataDir { get { throw new NotImplementedException(); } }
	}
}

namespace NinjaTrader.Code
{
	public static class Output
	{
		public static void Process(string message, NinjaTrader.NinjaScript.PrintTo printTo) { throw new NotImplementedException(); }
	}
}
