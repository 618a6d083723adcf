// TradeBridge NinjaScript add-on: instrument names to NinjaTrader
// instruments, with the protocol's instrument_unknown causes, and the
// instrument record (tick size, point value, expiry, roll, trading hours).
//
// Members marked "checked only against the stand-ins" use a NinjaTrader
// member whose exact signature the public documentation does not settle.

using System;
using System.Collections.Generic;
using System.Globalization;
using System.Text;

namespace NinjaTrader.NinjaScript.AddOns
{
	public static class TradeBridgeInstruments
	{
		private static TradeBridgeError Unknown(string cause, Cbi.MasterInstrument mi)
		{
			TradeBridgeError e = new TradeBridgeError(TradeBridgeProtocol.CodeInstrumentUnknown,
				"NinjaTrader cannot resolve the instrument");
			e.Cause = cause;
			if (mi != null)
			{
				e.Root = mi.Name;
				e.Months = Months(mi);
				try { e.Front = FrontName(mi); }
				catch (Exception) { }
			}
			return e;
		}

		/// <summary>The master instrument of a root: its continuous contract's ("ES ##-##"), or a plain instrument's; null when none.</summary>
		public static Cbi.MasterInstrument FindMaster(string root)
		{
			foreach (string name in new[] { root + " ##-##", root })
			{
				Cbi.Instrument ins = null;
				try { ins = Cbi.Instrument.GetInstrument(name); }
				catch (Exception) { }
				if (ins != null && ins.MasterInstrument != null && string.Equals(ins.MasterInstrument.Name, root, StringComparison.OrdinalIgnoreCase))
					return ins.MasterInstrument;
			}
			// MasterInstrument.All, looked up by name (see TradeBridgeReflect).
			System.Collections.IEnumerable all = null;
			try { all = TradeBridgeReflect.Get(typeof(Cbi.MasterInstrument), null, "All") as System.Collections.IEnumerable; }
			catch (Exception) { }
			if (all == null)
				return null;
			Cbi.MasterInstrument other = null;
			lock (all)
			{
				foreach (object o in all)
				{
					Cbi.MasterInstrument mi = o as Cbi.MasterInstrument;
					if (mi == null || !string.Equals(mi.Name, root, StringComparison.OrdinalIgnoreCase))
						continue;
					if (mi.InstrumentType == Cbi.InstrumentType.Future)
						return mi;
					if (other == null)
						other = mi;
				}
			}
			return other;
		}

		private struct Roll
		{
			public DateTime ContractMonth, Date;
		}

		private static List<Roll> Rollovers(Cbi.MasterInstrument mi)
		{
			List<Roll> list = new List<Roll>();
			try
			{
				if (mi.RolloverCollection != null)
					foreach (var r in mi.RolloverCollection)
						if (r != null)
							list.Add(new Roll { ContractMonth = r.ContractMonth, Date = r.Date });
			}
			catch (Exception)
			{
			}
			list.Sort(delegate (Roll a, Roll b) { return a.ContractMonth.CompareTo(b.ContractMonth); });
			return list;
		}

		/// <summary>The root's contract months as month codes in calendar order, e.g. "HMUZ".</summary>
		public static string Months(Cbi.MasterInstrument mi)
		{
			bool[] seen = new bool[13];
			foreach (Roll r in Rollovers(mi))
				seen[r.ContractMonth.Month] = true;
			StringBuilder sb = new StringBuilder();
			for (int m = 1; m <= 12; m++)
				if (seen[m])
					sb.Append(TradeBridgeInstrumentName.MonthCodes[m - 1]);
			return sb.ToString();
		}

		/// <summary>The front month's contract name, by NinjaTrader's rollover dates.</summary>
		public static string FrontName(Cbi.MasterInstrument mi)
		{
			DateTime expiry = mi.GetNextExpiry(NinjaTrader.Core.Globals.Now);
			return TradeBridgeInstrumentName.ContractName(mi.Name, expiry.Month, expiry.Year);
		}

		/// <summary>Resolves a name as the agent sends it: a contract "ES 12-26" or a root "ES".</summary>
		public static Cbi.Instrument Resolve(string name)
		{
			TradeBridgeInstrumentName n = TradeBridgeInstrumentName.Parse(name);
			if (n.Form == TradeBridgeInstrumentForm.Malformed)
				throw Unknown("malformed", null);
			Cbi.MasterInstrument mi = FindMaster(n.Root);
			if (mi == null)
				throw Unknown("unknown_root", null);
			if (mi.InstrumentType != Cbi.InstrumentType.Future)
			{
				// Not a future: only its own name names it.
				Cbi.Instrument plain = n.Form == TradeBridgeInstrumentForm.Root ? Cbi.Instrument.GetInstrument(mi.Name) : null;
				if (plain == null)
					throw Unknown("malformed", null);
				return plain;
			}
			if (n.Form == TradeBridgeInstrumentForm.Root)
			{
				Cbi.Instrument front = Cbi.Instrument.GetInstrument(FrontName(mi));
				if (front == null)
					throw Unknown("not_listed", mi);
				return front;
			}
			int year = n.Year;
			if (n.Form == TradeBridgeInstrumentForm.MonthCode && n.Year < 10)
			{
				// One digit: the first year from this one that ends in it.
				int y = DateTime.UtcNow.Year;
				while (y % 10 != n.Year)
					y++;
				year = y % 100;
			}
			string months = Months(mi);
			if (months.Length > 0 && months.IndexOf(TradeBridgeInstrumentName.MonthCodes[n.Month - 1]) < 0)
				throw Unknown("not_contract_month", mi);
			DateTime contract = new DateTime(2000 + year, n.Month, 1);
			DateTime frontExpiry = mi.GetNextExpiry(NinjaTrader.Core.Globals.Now);
			if (contract < new DateTime(frontExpiry.Year, frontExpiry.Month, 1))
				throw Unknown("expired", mi);
			List<Roll> rolls = Rollovers(mi);
			if (rolls.Count > 0)
			{
				DateTime last = rolls[rolls.Count - 1].ContractMonth;
				if (contract > new DateTime(last.Year, last.Month, 1))
					throw Unknown("not_listed", mi);
			}
			Cbi.Instrument ins = Cbi.Instrument.GetInstrument(TradeBridgeInstrumentName.ContractName(mi.Name, n.Month, year));
			if (ins == null)
				throw Unknown("not_listed", mi);
			return ins;
		}

		/// <summary>The instrument record.</summary>
		public static void Write(TradeBridgeJsonWriter w, Cbi.Instrument ins)
		{
			Cbi.MasterInstrument mi = ins.MasterInstrument;
			string expiry = "", rollDate = "", next = "";
			if (mi.InstrumentType == Cbi.InstrumentType.Future && ins.Expiry > DateTime.MinValue)
			{
				expiry = ins.Expiry.ToString("yyyy-MM-dd", CultureInfo.InvariantCulture);
				DateTime month = new DateTime(ins.Expiry.Year, ins.Expiry.Month, 1);
				foreach (Roll r in Rollovers(mi))
				{
					if (new DateTime(r.ContractMonth.Year, r.ContractMonth.Month, 1) > month)
					{
						// The rollover into the next contract is the day this one stops being the front month.
						rollDate = r.Date.ToString("yyyy-MM-dd", CultureInfo.InvariantCulture);
						next = TradeBridgeInstrumentName.ContractName(mi.Name, r.ContractMonth.Month, r.ContractMonth.Year);
						break;
					}
				}
			}
			NinjaTrader.Data.TradingHours th = mi.TradingHours;
			w.BeginObject();
			w.Prop("instrument", ins.FullName);
			w.Prop("root", mi.Name);
			w.Prop("description", mi.Description ?? "");
			w.Prop("exchange", ins.Exchange.ToString());
			w.Prop("currency", TradeBridgeMapping.CurrencyCode(mi.Currency));
			w.Prop("tickSize", mi.TickSize);
			w.Prop("pointValue", mi.PointValue);
			w.Prop("tickValue", mi.TickSize * mi.PointValue);
			w.Prop("expiry", expiry);
			w.Prop("rollDate", rollDate);
			w.Prop("nextInstrument", next);
			w.Key("tradingHours").BeginObject();
			w.Prop("timeZone", th == null ? "" : TradeBridgeMapping.IanaZone(th.TimeZoneInfo));
			w.Prop("description", th == null ? "" : th.Name ?? "");
			w.EndObject();
			bool open = false;
			w.Key("sessions").BeginArray();
			if (th != null)
			{
				try
				{
					// The documented constructor takes a Bars; one taking TradingHours is
					// looked up at run time (see TradeBridgeReflect).
					NinjaTrader.Data.SessionIterator it = (NinjaTrader.Data.SessionIterator)Activator.CreateInstance(
						typeof(NinjaTrader.Data.SessionIterator), th);
					DateTime nowLocal = NinjaTrader.Core.Globals.Now;
					DateTime at = nowLocal;
					for (int i = 0; i < 3; i++)
					{
						if (!it.GetNextSession(at, true))
							break;
						DateTime b = it.ActualSessionBegin, e = it.ActualSessionEnd;
						if (e <= at)
							break;
						if (i == 0 && b <= nowLocal && nowLocal < e)
							open = true;
						w.BeginObject();
						w.Prop("open", TradeBridgeTime.Format(TradeBridgeMapping.ToUtc(b)));
						w.Prop("close", TradeBridgeTime.Format(TradeBridgeMapping.ToUtc(e)));
						w.EndObject();
						at = e.AddSeconds(1);
					}
				}
				catch (Exception)
				{
					// Sessions are informative; the record stands without them.
				}
			}
			w.EndArray();
			w.Prop("marketOpen", open);
			w.EndObject();
		}
	}
}
