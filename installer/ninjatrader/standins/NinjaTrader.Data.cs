// Stand-ins for NinjaTrader 8's NinjaTrader.Data types that the TradeBridge
// add-on uses, so that it compiles with Mono outside NinjaTrader. These are
// NOT NinjaTrader's declarations: they follow NinjaTrader's public
// NinjaScript documentation, and their bodies do nothing or throw. They are
// never shipped; see README.md beside this file.

using System;
using NinjaTrader.Cbi;

namespace NinjaTrader.Data
{
	public enum BarsPeriodType { Tick, Volume, Range, Second, Minute, Day, Week, Month, Year }

	public enum MarketDataType { Ask, Bid, Last, DailyHigh, DailyLow, DailyVolume, LastClose, Opening, OpenInterest, Settlement, Unknown }

	public class BarsPeriod
	{
		public BarsPeriodType BarsPeriodType { get; set; }
		public MarketDataType MarketDataType { get; set; }
		public int Value { get; set; }
	}

	public class Bars
	{
		public int Count { get; set; }
		public double GetClose(int index) { throw new NotImplementedException(); }
		public double GetHigh(int index) { throw new NotImplementedException(); }
		public double GetLow(int index) { throw new NotImplementedException(); }
		public double GetOpen(int index) { throw new NotImplementedException(); }
		public DateTime GetTime(int index) { throw new NotImplementedException(); }
		public long GetVolume(int index) { throw new NotImplementedException(); }
	}

	public class BarsSeries
	{
		public double GetClose(int index) { throw new NotImplementedException(); }
		public double GetHigh(int index) { throw new NotImplementedException(); }
		public double GetLow(int index) { throw new NotImplementedException(); }
		public double GetOpen(int index) { throw new NotImplementedException(); }
		public DateTime GetTime(int index) { throw new NotImplementedException(); }
	}

	public class BarsUpdateEventArgs : EventArgs
	{
		public BarsSeries BarsSeries { get; set; }
		public int MaxIndex { get; set; }
		public int MinIndex { get; set; }
	}

	public delegate void BarsUpdateEventHandler(object sender, BarsUpdateEventArgs e);

	public class BarsRequest : IDisposable
	{
		public BarsRequest(Instrument instrument, int barsBack) { }
		public BarsRequest(Instrument instrument, DateTime fromLocal, DateTime toLocal) { }

		public event BarsUpdateEventHandler Update { add { } remove { } }

		public Bars Bars { get; set; }
		public BarsPeriod BarsPeriod { get; set; }
		public TradingHours TradingHours { get; set; }

		public void Dispose() { }
		public void Request(Action<BarsRequest, ErrorCode, string> callback) { throw new NotImplementedException(); }
	}

	public class MarketDataEventArgs : EventArgs
	{
		public Instrument Instrument { get; set; }
		public double Price { get; set; }
		public DateTime Time { get; set; }
		public long Volume { get; set; }
	}

	public class MarketData
	{
		public event EventHandler<MarketDataEventArgs> Update { add { } remove { } }

		public MarketDataEventArgs Ask { get; set; }
		public MarketDataEventArgs Bid { get; set; }
		public MarketDataEventArgs DailyHigh { get; set; }
		public MarketDataEventArgs DailyLow { get; set; }
		public MarketDataEventArgs DailyVolume { get; set; }
		public MarketDataEventArgs Last { get; set; }
		public MarketDataEventArgs LastClose { get; set; }
		public MarketDataEventArgs Opening { get; set; }
	}

	public class TradingHours
	{
		public string Name { get; set; }
		public TimeZoneInfo TimeZoneInfo { get; set; }
	}

	public class SessionIterator
	{
		public SessionIterator(Bars bars) { }

		public DateTime ActualSessionBegin { get; set; }
		public DateTime ActualSessionEnd { get; set; }

		public bool GetNextSession(DateTime timeLocal, bool includesEndTimeStamp) { throw new NotImplementedException(); }
	}
}
