// TradeBridge NinjaScript add-on: NinjaTrader objects as the protocol's
// records (docs/ninjatrader-protocol.md, "Records"), and the few
// NinjaTrader values the requests name (actions, order types, time in
// force, bar periods). Enumerations keep NinjaTrader's own spelling.
//
// Members marked "checked only against the stand-ins" use a NinjaTrader
// member whose exact signature the public documentation does not settle.

using System;
using System.Collections.Generic;
using System.Globalization;

namespace NinjaTrader.NinjaScript.AddOns
{
	/// <summary>The agent's order ids of NinjaTrader orders, and the parts of their names.</summary>
	public sealed class TradeBridgeOrderIds
	{
		private sealed class Entry
		{
			public string OrderId, Name, Tag;
		}

		private readonly object gate = new object();
		// ATM entries must be named "Entry" in NinjaTrader, so their id cannot
		// travel in the name: it is kept here, for this run of the add-on.
		private readonly Dictionary<Cbi.Order, Entry> atm = new Dictionary<Cbi.Order, Entry>();
		// Ids handed to submitOrder in this run, so a repeat is refused even
		// before NinjaTrader lists the order.
		private readonly HashSet<string> used = new HashSet<string>(StringComparer.Ordinal);

		public void RememberAtmEntry(Cbi.Order order, string orderId, string name, string tag)
		{
			lock (gate)
				atm[order] = new Entry { OrderId = orderId, Name = name ?? "", Tag = tag ?? "" };
		}

		/// <summary>Claims an id for a new order; false when it was already used in this run.</summary>
		public bool Claim(string orderId)
		{
			lock (gate)
				return used.Add(orderId);
		}

		public void Release(string orderId)
		{
			lock (gate)
				used.Remove(orderId);
		}

		/// <summary>The order's id, signal name and strategy tag as the protocol reports them.</summary>
		public void Describe(Cbi.Order o, out string orderId, out string name, out string tag)
		{
			Entry e;
			lock (gate)
				atm.TryGetValue(o, out e);
			if (e != null)
			{
				orderId = e.OrderId;
				name = e.Name;
				tag = e.Tag;
				return;
			}
			if (TradeBridgeOrderName.TryParse(o.Name, out name, out orderId, out tag))
				return;
			orderId = o.OrderId ?? "";
			name = o.Name ?? "";
			tag = "";
		}

		public string IdOf(Cbi.Order o)
		{
			string id, name, tag;
			Describe(o, out id, out name, out tag);
			return id;
		}
	}

	/// <summary>
	/// Members of NinjaTrader looked up at run time: used where the public
	/// documentation does not settle a member, so that a member missing or
	/// different in some NinjaTrader version fails one request instead of
	/// NinjaTrader's compile of every NinjaScript.
	/// </summary>
	public static class TradeBridgeReflect
	{
		private const System.Reflection.BindingFlags Any = System.Reflection.BindingFlags.Public |
			System.Reflection.BindingFlags.NonPublic | System.Reflection.BindingFlags.Instance | System.Reflection.BindingFlags.Static;

		/// <summary>The value of a property or field (static when target is null); null when there is none.</summary>
		public static object Get(Type type, object target, string name)
		{
			if (type == null)
				return null;
			System.Reflection.PropertyInfo p = type.GetProperty(name, Any);
			if (p != null)
				return p.GetValue(target, null);
			System.Reflection.FieldInfo f = type.GetField(name, Any);
			return f == null ? null : f.GetValue(target);
		}

		/// <summary>Calls the method of that name whose parameters take args; throws MissingMethodException when there is none.</summary>
		public static object Call(object target, string name, params object[] args)
		{
			Type[] types = new Type[args.Length];
			for (int i = 0; i < args.Length; i++)
				types[i] = args[i].GetType();
			System.Reflection.MethodInfo m = target.GetType().GetMethod(name, Any, null, types, null);
			if (m == null)
				throw new MissingMethodException(target.GetType().Name, name);
			try
			{
				return m.Invoke(target, args);
			}
			catch (System.Reflection.TargetInvocationException e)
			{
				throw e.InnerException ?? e;
			}
		}
	}

	/// <summary>Writes NinjaTrader objects as the protocol's records.</summary>
	public static class TradeBridgeMapping
	{
		// ---- times ----

		/// <summary>
		/// NinjaTrader's times are in the time zone of its General options.
		/// This turns one into UTC.
		/// </summary>
		public static DateTime ToUtc(DateTime t)
		{
			if (t.Kind == DateTimeKind.Utc)
				return t;
			try
			{
				TimeZoneInfo tz = PlatformTimeZone();
				if (tz != null)
					return TimeZoneInfo.ConvertTimeToUtc(DateTime.SpecifyKind(t, DateTimeKind.Unspecified), tz);
			}
			catch (ArgumentException)
			{
				// A time in a daylight-saving gap: fall back to the machine's zone.
			}
			return DateTime.SpecifyKind(t, DateTimeKind.Local).ToUniversalTime();
		}

		/// <summary>The platform's time of a UTC instant.</summary>
		public static DateTime FromUtc(DateTime utc)
		{
			TimeZoneInfo tz = PlatformTimeZone();
			if (tz != null)
				return TimeZoneInfo.ConvertTimeFromUtc(DateTime.SpecifyKind(utc, DateTimeKind.Utc), tz);
			return utc.ToLocalTime();
		}

		private static TimeZoneInfo PlatformTimeZone()
		{
			// NinjaTrader.Core.Globals.GeneralOptions.TimeZoneInfo, looked up by name:
			// the documentation does not settle it, and a missing member must not
			// break NinjaTrader's compile of every NinjaScript.
			try
			{
				object opts = TradeBridgeReflect.Get(typeof(NinjaTrader.Core.Globals), null, "GeneralOptions");
				return TradeBridgeReflect.Get(opts == null ? null : opts.GetType(), opts, "TimeZoneInfo") as TimeZoneInfo;
			}
			catch (Exception)
			{
				return null;
			}
		}

		private static TimeZoneInfo newYork;

		/// <summary>America/New_York, under its Windows or its IANA name.</summary>
		public static TimeZoneInfo NewYork()
		{
			if (newYork != null)
				return newYork;
			foreach (string id in new[] { "Eastern Standard Time", "America/New_York" })
			{
				try
				{
					newYork = TimeZoneInfo.FindSystemTimeZoneById(id);
					return newYork;
				}
				catch (Exception)
				{
				}
			}
			return TimeZoneInfo.Utc;
		}

		/// <summary>When the current trading session began: 18:00 New York time, the day before its trade date.</summary>
		public static DateTime SessionStartUtc(DateTime nowUtc)
		{
			TimeZoneInfo ny = NewYork();
			DateTime nyNow = TimeZoneInfo.ConvertTimeFromUtc(nowUtc, ny);
			DateTime start = nyNow.Date.AddHours(18);
			if (nyNow < start)
				start = start.AddDays(-1);
			try
			{
				return TimeZoneInfo.ConvertTimeToUtc(start, ny);
			}
			catch (ArgumentException)
			{
				return nowUtc.AddDays(-1);
			}
		}

		// ---- enumerations ----

		public static string Action(Cbi.OrderAction a)
		{
			switch (a)
			{
				case Cbi.OrderAction.Buy:
				case Cbi.OrderAction.BuyToCover:
					return "Buy";
				case Cbi.OrderAction.Sell:
				case Cbi.OrderAction.SellShort:
					return "Sell";
			}
			return a.ToString();
		}

		public static Cbi.OrderAction ParseAction(string s)
		{
			if ("Buy".Equals(s, StringComparison.OrdinalIgnoreCase)) return Cbi.OrderAction.Buy;
			if ("Sell".Equals(s, StringComparison.OrdinalIgnoreCase)) return Cbi.OrderAction.Sell;
			throw TradeBridgeError.BadRequest("action must be Buy or Sell");
		}

		public static Cbi.OrderType ParseOrderType(string s)
		{
			if ("Market".Equals(s, StringComparison.OrdinalIgnoreCase)) return Cbi.OrderType.Market;
			if ("Limit".Equals(s, StringComparison.OrdinalIgnoreCase)) return Cbi.OrderType.Limit;
			if ("StopMarket".Equals(s, StringComparison.OrdinalIgnoreCase)) return Cbi.OrderType.StopMarket;
			if ("StopLimit".Equals(s, StringComparison.OrdinalIgnoreCase)) return Cbi.OrderType.StopLimit;
			throw TradeBridgeError.BadRequest("orderType must be Market, Limit, StopMarket or StopLimit");
		}

		public static Cbi.TimeInForce ParseTimeInForce(string s)
		{
			if (string.IsNullOrEmpty(s) || "Day".Equals(s, StringComparison.OrdinalIgnoreCase)) return Cbi.TimeInForce.Day;
			if ("Gtc".Equals(s, StringComparison.OrdinalIgnoreCase)) return Cbi.TimeInForce.Gtc;
			throw TradeBridgeError.BadRequest("timeInForce must be Day or Gtc");
		}

		public static NinjaTrader.Data.BarsPeriodType ParsePeriodType(string s)
		{
			switch ((s ?? "").ToLowerInvariant())
			{
				case "tick": return NinjaTrader.Data.BarsPeriodType.Tick;
				case "second": return NinjaTrader.Data.BarsPeriodType.Second;
				case "minute": return NinjaTrader.Data.BarsPeriodType.Minute;
				case "day": return NinjaTrader.Data.BarsPeriodType.Day;
				case "week": return NinjaTrader.Data.BarsPeriodType.Week;
				case "month": return NinjaTrader.Data.BarsPeriodType.Month;
			}
			throw TradeBridgeError.BadRequest("periodType must be tick, second, minute, day, week or month");
		}

		public static string PeriodTypeName(NinjaTrader.Data.BarsPeriodType t)
		{
			return t.ToString().ToLowerInvariant();
		}

		/// <summary>ISO 4217 codes of the currencies NinjaTrader names in words.</summary>
		public static string CurrencyCode(Cbi.Currency c)
		{
			switch (c.ToString())
			{
				case "UsDollar": return "USD";
				case "Euro": return "EUR";
				case "BritishPound": return "GBP";
				case "JapaneseYen": return "JPY";
				case "CanadianDollar": return "CAD";
				case "AustralianDollar": return "AUD";
				case "SwissFranc": return "CHF";
				case "HongKongDollar": return "HKD";
				case "NewZealandDollar": return "NZD";
				case "SwedishKrona": return "SEK";
				case "NorwegianKrone": return "NOK";
				case "DanishKrone": return "DKK";
				case "SingaporeDollar": return "SGD";
				case "MexicanPeso": return "MXN";
				case "SouthAfricanRand": return "ZAR";
			}
			return c.ToString();
		}

		/// <summary>IANA names of the Windows time zones trading hours use most.</summary>
		public static string IanaZone(TimeZoneInfo tz)
		{
			if (tz == null)
				return "";
			switch (tz.Id)
			{
				case "Eastern Standard Time": return "America/New_York";
				case "Central Standard Time": return "America/Chicago";
				case "Mountain Standard Time": return "America/Denver";
				case "Pacific Standard Time": return "America/Los_Angeles";
				case "GMT Standard Time": return "Europe/London";
				case "W. Europe Standard Time": return "Europe/Berlin";
				case "Romance Standard Time": return "Europe/Paris";
				case "Tokyo Standard Time": return "Asia/Tokyo";
				case "China Standard Time": return "Asia/Shanghai";
				case "Singapore Standard Time": return "Asia/Singapore";
				case "AUS Eastern Standard Time": return "Australia/Sydney";
				case "UTC": return "UTC";
			}
			return tz.Id;
		}

		private static double Get(Cbi.Account a, Cbi.AccountItem item)
		{
			try
			{
				return a.Get(item, a.Denomination);
			}
			catch (Exception)
			{
				return 0;
			}
		}

		// Account items that some NinjaTrader versions or connections have and others do not are looked up by name.
		private static double GetByName(Cbi.Account a, string itemName)
		{
			try
			{
				Cbi.AccountItem item = (Cbi.AccountItem)Enum.Parse(typeof(Cbi.AccountItem), itemName);
				return a.Get(item, a.Denomination);
			}
			catch (Exception)
			{
				return 0;
			}
		}

		// ---- records ----

		public static void Connection(TradeBridgeJsonWriter w, Cbi.Connection c)
		{
			w.BeginObject();
			w.Prop("name", ConnectionName(c));
			w.Prop("status", c.Status.ToString());
			w.Key("accounts").BeginArray();
			Cbi.Account[] accounts;
			lock (c.Accounts)
				accounts = ToArray(c.Accounts);
			foreach (Cbi.Account a in accounts)
				w.String(a.Name);
			w.EndArray();
			w.EndObject();
		}

		public static string ConnectionName(Cbi.Connection c)
		{
			if (c == null || c.Options == null)
				return "";
			return c.Options.Name ?? "";
		}

		public static void Account(TradeBridgeJsonWriter w, Cbi.Account a)
		{
			w.BeginObject();
			w.Prop("name", a.Name);
			w.Prop("displayName", string.IsNullOrEmpty(a.DisplayName) ? a.Name : a.DisplayName);
			w.Prop("provider", a.Provider.ToString());
			w.Prop("connection", ConnectionName(a.Connection));
			w.Prop("connectionStatus", a.ConnectionStatus.ToString());
			w.Prop("denomination", CurrencyCode(a.Denomination));
			w.Prop("status", a.AccountStatus.ToString());
			w.Key("item").BeginObject();
			w.Prop("buyingPower", Get(a, Cbi.AccountItem.BuyingPower));
			w.Prop("cashValue", Get(a, Cbi.AccountItem.CashValue));
			w.Prop("netLiquidation", Get(a, Cbi.AccountItem.NetLiquidation));
			w.Prop("realizedProfitLoss", Get(a, Cbi.AccountItem.RealizedProfitLoss));
			w.Prop("unrealizedProfitLoss", Get(a, Cbi.AccountItem.UnrealizedProfitLoss));
			w.Prop("grossRealizedProfitLoss", Get(a, Cbi.AccountItem.GrossRealizedProfitLoss));
			w.Prop("commission", Get(a, Cbi.AccountItem.Commission));
			w.Prop("initialMargin", Get(a, Cbi.AccountItem.InitialMargin));
			w.Prop("maintenanceMargin", Get(a, Cbi.AccountItem.MaintenanceMargin));
			w.Prop("dailyLossLimit", GetByName(a, "DailyLossLimit"));
			w.Prop("trailingMaxDrawdown", GetByName(a, "TrailingMaxDrawdown"));
			w.Prop("weeklyProfitLoss", GetByName(a, "WeeklyProfitLoss"));
			w.EndObject();
			w.EndObject();
		}

		public static void Position(TradeBridgeJsonWriter w, string account, Cbi.Position p, bool flat)
		{
			Cbi.Instrument ins = p.Instrument;
			double market = 0, unrealized = 0;
			if (!flat)
			{
				try
				{
					market = p.GetMarketPrice();
					unrealized = p.GetUnrealizedProfitLoss(Cbi.PerformanceUnit.Currency, market);
				}
				catch (Exception)
				{
				}
			}
			w.BeginObject();
			w.Prop("account", account);
			w.Prop("instrument", ins == null ? "" : ins.FullName);
			w.Prop("instrumentType", ins == null || ins.MasterInstrument == null ? "" : ins.MasterInstrument.InstrumentType.ToString());
			w.Prop("marketPosition", flat ? "Flat" : p.MarketPosition.ToString());
			w.Prop("quantity", flat ? 0 : p.Quantity);
			w.Prop("averagePrice", flat ? 0 : p.AveragePrice);
			w.Prop("marketPrice", market);
			w.Prop("unrealizedProfitLoss", unrealized);
			w.EndObject();
		}

		/// <summary>A flat position of an instrument that has no Position object any more.</summary>
		public static void FlatPosition(TradeBridgeJsonWriter w, string account, Cbi.Instrument ins)
		{
			w.BeginObject();
			w.Prop("account", account);
			w.Prop("instrument", ins.FullName);
			w.Prop("instrumentType", ins.MasterInstrument == null ? "" : ins.MasterInstrument.InstrumentType.ToString());
			w.Prop("marketPosition", "Flat");
			w.Prop("quantity", 0);
			w.Prop("averagePrice", 0.0);
			w.Prop("marketPrice", 0.0);
			w.Prop("unrealizedProfitLoss", 0.0);
			w.EndObject();
		}

		public static void Order(TradeBridgeJsonWriter w, Cbi.Order o, TradeBridgeOrderIds ids)
		{
			string id, name, tag;
			ids.Describe(o, out id, out name, out tag);
			DateTime utc = ToUtc(o.Time);
			w.BeginObject();
			w.Prop("orderId", id);
			w.Prop("account", o.Account == null ? "" : o.Account.Name);
			w.Prop("instrument", o.Instrument == null ? "" : o.Instrument.FullName);
			w.Prop("name", name);
			w.Prop("orderAction", Action(o.OrderAction));
			w.Prop("orderType", o.OrderType.ToString());
			w.Prop("orderState", o.OrderState.ToString());
			w.Prop("quantity", o.Quantity);
			w.Prop("filled", o.Filled);
			w.Prop("averageFillPrice", o.AverageFillPrice);
			w.Prop("limitPrice", o.LimitPrice);
			w.Prop("stopPrice", o.StopPrice);
			w.Prop("timeInForce", o.TimeInForce.ToString());
			w.PropIf("oco", o.Oco);
			w.PropIf("strategyTag", tag);
			w.Prop("time", TradeBridgeTime.Format(utc));
			w.Prop("epoch", TradeBridgeTime.Epoch(utc));
			w.EndObject();
		}

		public static void Execution(TradeBridgeJsonWriter w, Cbi.Execution e, TradeBridgeOrderIds ids)
		{
			string orderId = e.OrderId ?? "", name = e.Name ?? "";
			if (e.Order != null)
			{
				string tag;
				ids.Describe(e.Order, out orderId, out name, out tag);
			}
			else
			{
				string n, id, tag;
				if (TradeBridgeOrderName.TryParse(e.Name, out n, out id, out tag))
					name = n;
			}
			DateTime utc = ToUtc(e.Time);
			w.BeginObject();
			w.Prop("id", e.ExecutionId ?? "");
			w.Prop("orderId", orderId);
			w.Prop("account", e.Account == null ? "" : e.Account.Name);
			w.Prop("instrument", e.Instrument == null ? "" : e.Instrument.FullName);
			w.Prop("name", name);
			w.Prop("marketPosition", e.MarketPosition.ToString());
			w.Prop("quantity", e.Quantity);
			w.Prop("price", e.Price);
			w.Prop("commission", e.Commission);
			w.Prop("time", TradeBridgeTime.Format(utc));
			w.Prop("epoch", TradeBridgeTime.Epoch(utc));
			w.EndObject();
		}

		private static double Price(NinjaTrader.Data.MarketDataEventArgs e)
		{
			return e == null ? 0 : e.Price;
		}

		private static long Volume(NinjaTrader.Data.MarketDataEventArgs e)
		{
			return e == null ? 0 : e.Volume;
		}

		public static void Quote(TradeBridgeJsonWriter w, Cbi.Instrument ins)
		{
			NinjaTrader.Data.MarketData md = ins.MarketData;
			Cbi.MasterInstrument mi = ins.MasterInstrument;
			NinjaTrader.Data.MarketDataEventArgs last = md == null ? null : md.Last;
			DateTime utc = last != null && last.Time > DateTime.MinValue ? ToUtc(last.Time) : DateTime.UtcNow;
			w.BeginObject();
			w.Prop("instrument", ins.FullName);
			w.Prop("bid", md == null ? 0 : Price(md.Bid));
			w.Prop("ask", md == null ? 0 : Price(md.Ask));
			w.Prop("last", Price(last));
			w.Prop("open", md == null ? 0 : Price(md.Opening));
			w.Prop("high", md == null ? 0 : Price(md.DailyHigh));
			w.Prop("low", md == null ? 0 : Price(md.DailyLow));
			w.Prop("close", md == null ? 0 : Price(md.LastClose));
			w.Prop("volume", md == null ? 0 : Volume(md.DailyVolume));
			w.Prop("bidSize", md == null ? 0 : Volume(md.Bid));
			w.Prop("askSize", md == null ? 0 : Volume(md.Ask));
			w.Prop("tickSize", mi.TickSize);
			w.Prop("pointValue", mi.PointValue);
			w.Prop("tickValue", mi.TickSize * mi.PointValue);
			w.Prop("quoteTimeUtc", TradeBridgeTime.Format(utc));
			w.Prop("epoch", TradeBridgeTime.Epoch(utc));
			w.EndObject();
		}

		/// <summary>
		/// A bar: NinjaTrader stamps intraday bars with their end, the record
		/// with their start, so second and minute bars move back by their
		/// period; tick bars keep their stamp, and day, week and month bars are
		/// their trade date at 00:00 UTC.
		/// </summary>
		public static void Bar(TradeBridgeJsonWriter w, DateTime ntTime, double open, double high, double low, double close,
			long volume, NinjaTrader.Data.BarsPeriodType type, int period)
		{
			DateTime utc;
			switch (type)
			{
				case NinjaTrader.Data.BarsPeriodType.Second:
					utc = ToUtc(ntTime.AddSeconds(-period));
					break;
				case NinjaTrader.Data.BarsPeriodType.Minute:
					utc = ToUtc(ntTime.AddMinutes(-period));
					break;
				case NinjaTrader.Data.BarsPeriodType.Day:
				case NinjaTrader.Data.BarsPeriodType.Week:
				case NinjaTrader.Data.BarsPeriodType.Month:
					utc = DateTime.SpecifyKind(ntTime.Date, DateTimeKind.Utc);
					break;
				default:
					utc = ToUtc(ntTime);
					break;
			}
			w.BeginObject();
			w.Prop("time", TradeBridgeTime.Format(utc));
			w.Prop("epoch", TradeBridgeTime.Epoch(utc));
			w.Prop("open", open);
			w.Prop("high", high);
			w.Prop("low", low);
			w.Prop("close", close);
			w.Prop("volume", volume);
			w.EndObject();
		}

		/// <summary>The protocol's state of a strategy: Enabled, Disabled, Closed or Error.</summary>
		public static string StrategyState(NinjaTrader.NinjaScript.StrategyBase s)
		{
			switch (s.State)
			{
				case State.Historical:
				case State.Transition:
				case State.Realtime:
					return "Enabled";
				case State.Terminated:
				case State.Finalized:
					return "Closed";
			}
			return "Disabled";
		}

		public static bool StrategyTerminal(NinjaTrader.NinjaScript.StrategyBase s)
		{
			string st = StrategyState(s);
			return st == "Closed" || st == "Error";
		}

		public static void Strategy(TradeBridgeJsonWriter w, NinjaTrader.NinjaScript.StrategyBase s)
		{
			string id = s.Id.ToString(CultureInfo.InvariantCulture);
			string state = StrategyState(s);
			Cbi.Instrument ins = null;
			try
			{
				if (s.Instruments != null)
					foreach (Cbi.Instrument i in s.Instruments)
					{
						ins = i;
						break;
					}
			}
			catch (Exception)
			{
			}
			Cbi.Position pos = null;
			try { pos = s.Position; }
			catch (Exception) { }
			bool flat = pos == null || pos.MarketPosition == Cbi.MarketPosition.Flat;
			double unrealized = 0;
			if (!flat)
			{
				try { unrealized = pos.GetUnrealizedProfitLoss(Cbi.PerformanceUnit.Currency, pos.GetMarketPrice()); }
				catch (Exception) { }
			}
			bool atm = s is NinjaTrader.NinjaScript.AtmStrategy;
			w.BeginObject();
			w.Prop("id", id);
			w.Prop("strategyId", id);
			w.Prop("strategyClass", atm ? "AtmStrategy" : s.GetType().Name);
			w.Prop("account", s.Account == null ? "" : s.Account.Name);
			w.Prop("instrument", ins == null ? "" : ins.FullName);
			w.Prop("periodType", "");
			w.Prop("period", 0);
			w.Key("parameters").BeginObject();
			if (atm)
				w.PropIf("template", s.Template);
			w.EndObject();
			w.Prop("state", state);
			w.Prop("enabled", state == "Enabled");
			w.Prop("terminal", state == "Closed" || state == "Error");
			w.Prop("marketPosition", flat ? "Flat" : pos.MarketPosition.ToString());
			w.Prop("quantity", flat ? 0 : pos.Quantity);
			w.Prop("averagePrice", flat ? 0 : pos.AveragePrice);
			w.Prop("realizedProfitLoss", 0.0);
			w.Prop("unrealizedProfitLoss", unrealized);
			w.Prop("startedAt", "");
			w.EndObject();
		}

		public static T[] ToArray<T>(ICollection<T> c)
		{
			T[] a = new T[c.Count];
			c.CopyTo(a, 0);
			return a;
		}
	}
}
