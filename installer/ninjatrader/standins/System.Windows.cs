// Stand-ins for the WPF types (PresentationFramework, WindowsBase) that the
// TradeBridge add-on uses, so that it compiles with Mono's mcs, which ships
// no WPF. NinjaTrader compiles NinjaScript against the real assemblies.
// These are NOT Microsoft's declarations; they are never shipped; see
// README.md beside this file.

using System;

namespace System.Windows.Threading
{
	public sealed class DispatcherOperation { }

	public sealed class Dispatcher
	{
		public bool HasShutdownStarted { get { throw new NotImplementedException(); } }

		public DispatcherOperation InvokeAsync(Action callback) { throw new NotImplementedException(); }
	}
}

namespace System.Windows
{
	public class Application
	{
		public static Application Current { get { throw new NotImplementedException(); } }

		public System.Windows.Threading.Dispatcher Dispatcher { get { throw new NotImplementedException(); } }
	}
}
