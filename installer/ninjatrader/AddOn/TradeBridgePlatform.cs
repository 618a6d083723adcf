// TradeBridge NinjaScript add-on: the methods of the add-on protocol on
// NinjaTrader, and NinjaTrader's account, order, execution, position,
// connection, market data and bar events as the protocol's events.
//
// Every request runs on NinjaTrader's user-interface dispatcher (posted with
// InvokeAsync, so the connection's thread never waits for it), and what it
// changes is answered by a "settler" thread: it waits, boundedly, until
// NinjaTrader has reported the change, publishes the resulting records as
// events and then replies, so the events a request causes always come
// before its reply. NinjaTrader's own events are published from the threads
// NinjaTrader raises them on; nothing here holds a lock of NinjaTrader's
// while it calls NinjaTrader.
//
// Members marked "checked only against the stand-ins" use a NinjaTrader
// member whose exact signature the public documentation does not settle.

using System;
using System.Collections.Generic;
using System.Globalization;
using System.IO;
using System.Threading;
using System.Xml;

namespace NinjaTrader.NinjaScript.AddOns
{
	public sealed class TradeBridgePlatform : ITradeBridgeHandler
	{
		/// <summary>The longest name NinjaTrader gives an order.</summary>
		public const int MaxOrderName = 50;

		private static readonly TimeSpan SettleDefault = TimeSpan.FromSeconds(2);
		private static readonly TimeSpan SettleMax = TimeSpan.FromSeconds(3);
		private static readonly TimeSpan SettlePoll = TimeSpan.FromMilliseconds(25);
		private static readonly TimeSpan QuoteInterval = TimeSpan.FromMilliseconds(100);
		private static readonly TimeSpan AccountInterval = TimeSpan.FromMilliseconds(250);
		private static readonly TimeSpan JoinTimeout = TimeSpan.FromSeconds(2);

		private readonly System.Windows.Threading.Dispatcher ui;
		private readonly Action<string> log;
		private readonly TradeBridgeOrderIds ids = new TradeBridgeOrderIds();
		private TradeBridgeServer server;

		private readonly object gate = new object();
		private readonly HashSet<Cbi.Account> accounts = new HashSet<Cbi.Account>();
		private readonly Dictionary<string, Cbi.Instrument> quoteSubs = new Dictionary<string, Cbi.Instrument>(StringComparer.Ordinal);
		private readonly Dictionary<string, DateTime> quoteSent = new Dictionary<string, DateTime>(StringComparer.Ordinal);
		private readonly HashSet<string> quoteDirty = new HashSet<string>(StringComparer.Ordinal);
		private readonly Dictionary<string, BarSub> barSubs = new Dictionary<string, BarSub>(StringComparer.Ordinal);
		private readonly HashSet<Cbi.Account> accountDirty = new HashSet<Cbi.Account>();
		private readonly Dictionary<Cbi.Order, int> orderErrors = new Dictionary<Cbi.Order, int>();
		private readonly Dictionary<Cbi.Order, string> orderErrorText = new Dictionary<Cbi.Order, string>();
		private readonly Dictionary<Cbi.Order, int> executed = new Dictionary<Cbi.Order, int>();
		private readonly List<KeyValuePair<Cbi.Order, DateTime>> forget = new List<KeyValuePair<Cbi.Order, DateTime>>();
		private DateTime accountFlushAt;

		private readonly object pendingGate = new object();
		private readonly List<Pending> pending = new List<Pending>();
		private readonly AutoResetEvent poke = new AutoResetEvent(false);
		private Thread settler;
		private volatile bool stopping;

		private sealed class Pending
		{
			public Func<bool> Done;
			public DateTime Deadline;
			public Action Complete;
			public TradeBridgeCall Call;
		}

		private sealed class BarSub
		{
			public string Key;
			public Cbi.Instrument Instrument;
			public NinjaTrader.Data.BarsPeriodType Type;
			public int Period;
			public NinjaTrader.Data.BarsRequest Request;
			public int LastIndex = -1;
			// The bar still forming is published at most once per QuoteInterval.
			public int FormingIndex = -1;
			public DateTime FormingSentUtc;
		}

		public TradeBridgePlatform(System.Windows.Threading.Dispatcher ui, Action<string> log)
		{
			if (ui == null)
				throw new ArgumentNullException("ui");
			this.ui = ui;
			this.log = log ?? delegate { };
		}

		/// <summary>Connects the platform to the server it publishes events on.</summary>
		public void Attach(TradeBridgeServer server)
		{
			this.server = server;
		}

		public string PlatformVersion
		{
			get
			{
				object v = NinjaTrader.Core.Globals.ProductVersion;
				return v == null ? "" : v.ToString();
			}
		}

		// ---------------------------------------------------------------- life cycle

		/// <summary>Subscribes to NinjaTrader's events and starts the settler. Call on the UI thread.</summary>
		public void Start()
		{
			Cbi.Account.AccountStatusUpdate += OnAccountStatusUpdate;
			Cbi.Connection.ConnectionStatusUpdate += OnConnectionStatusUpdate;
			SubscribeAccounts();
			settler = new Thread(SettleLoop) { IsBackground = true, Name = "TradeBridge settle" };
			settler.Start();
		}

		/// <summary>Unsubscribes from everything, fails what still waits and stops the settler. Idempotent.</summary>
		public void Stop()
		{
			if (stopping)
				return;
			stopping = true;
			try { Cbi.Account.AccountStatusUpdate -= OnAccountStatusUpdate; } catch (Exception) { }
			try { Cbi.Connection.ConnectionStatusUpdate -= OnConnectionStatusUpdate; } catch (Exception) { }
			Cbi.Account[] subscribed;
			lock (gate)
			{
				subscribed = new Cbi.Account[accounts.Count];
				accounts.CopyTo(subscribed);
				accounts.Clear();
			}
			foreach (Cbi.Account a in subscribed)
				UnsubscribeAccount(a);
			DropSubscriptions();
			poke.Set();
			if (settler != null && settler != Thread.CurrentThread)
				settler.Join(JoinTimeout);
			Pending[] left;
			lock (pendingGate)
			{
				left = pending.ToArray();
				pending.Clear();
			}
			foreach (Pending p in left)
				p.Call.Fail(TradeBridgeError.Internal("the add-on is stopping"));
		}

		private void SubscribeAccounts()
		{
			Cbi.Account[] all;
			lock (Cbi.Account.All)
				all = TradeBridgeMapping.ToArray(Cbi.Account.All);
			foreach (Cbi.Account a in all)
			{
				bool add;
				lock (gate)
					add = !stopping && accounts.Add(a);
				if (!add)
					continue;
				a.AccountItemUpdate += OnAccountItemUpdate;
				a.OrderUpdate += OnOrderUpdate;
				a.ExecutionUpdate += OnExecutionUpdate;
				a.PositionUpdate += OnPositionUpdate;
			}
		}

		private void UnsubscribeAccount(Cbi.Account a)
		{
			try
			{
				a.AccountItemUpdate -= OnAccountItemUpdate;
				a.OrderUpdate -= OnOrderUpdate;
				a.ExecutionUpdate -= OnExecutionUpdate;
				a.PositionUpdate -= OnPositionUpdate;
			}
			catch (Exception)
			{
			}
		}

		public void AgentConnected()
		{
		}

		/// <summary>Quote and bar subscriptions belong to the agent's connection: the agent sends them again.</summary>
		public void AgentDisconnected()
		{
			DropSubscriptions();
		}

		private void DropSubscriptions()
		{
			Cbi.Instrument[] quotes;
			BarSub[] bars;
			lock (gate)
			{
				quotes = new Cbi.Instrument[quoteSubs.Count];
				quoteSubs.Values.CopyTo(quotes, 0);
				quoteSubs.Clear();
				quoteDirty.Clear();
				bars = new BarSub[barSubs.Count];
				barSubs.Values.CopyTo(bars, 0);
				barSubs.Clear();
			}
			foreach (Cbi.Instrument ins in quotes)
				UnsubscribeQuotes(ins);
			foreach (BarSub b in bars)
			{
				BarSub sub = b;
				if (stopping || ui.HasShutdownStarted)
					DisposeBars(sub);
				else
					ui.InvokeAsync(delegate { DisposeBars(sub); });
			}
		}

		// ---------------------------------------------------------------- requests

		public void Handle(TradeBridgeCall call)
		{
			if (stopping || ui.HasShutdownStarted)
			{
				call.Fail(TradeBridgeError.Internal("NinjaTrader is closing"));
				return;
			}
			ui.InvokeAsync(delegate { Run(call); });
		}

		private void Run(TradeBridgeCall call)
		{
			try
			{
				switch (call.Method)
				{
					case "snapshot": Snapshot(call); break;
					case "submitOrder": SubmitOrder(call); break;
					case "cancelOrder": CancelOrder(call); break;
					case "changeOrder": ChangeOrder(call); break;
					case "flatten": Flatten(call); break;
					case "instrument": InstrumentInfo(call); break;
					case "quote": Quote(call); break;
					case "subscribe": Subscribe(call); break;
					case "unsubscribe": Unsubscribe(call); break;
					case "bars": Bars(call); break;
					case "subscribeBars": SubscribeBars(call); break;
					case "unsubscribeBars": UnsubscribeBars(call); break;
					case "atmTemplates": AtmTemplates(call); break;
					case "startStrategy": StartStrategy(call); break;
					case "setStrategyState": SetStrategyState(call); break;
					default:
						call.Fail(new TradeBridgeError(TradeBridgeProtocol.CodeUnknownMethod, "the add-on has no such method"));
						break;
				}
			}
			catch (TradeBridgeError e)
			{
				call.Fail(e);
			}
			catch (Exception e)
			{
				log("request " + call.Method + " failed: " + e.GetType().Name + ": " + e.Message);
				call.Fail(TradeBridgeError.Internal("the add-on failed to run the request"));
			}
		}

		private static TimeSpan SettleLimit(TradeBridgeCall call)
		{
			if (call.TimeoutMs <= 0)
				return SettleDefault;
			TimeSpan half = TimeSpan.FromMilliseconds(call.TimeoutMs / 2);
			if (half < TimeSpan.FromMilliseconds(100))
				return TimeSpan.FromMilliseconds(100);
			return half > SettleMax ? SettleMax : half;
		}

		// Waits (on the settler) until done() or the settle limit, then runs complete.
		private void Settle(TradeBridgeCall call, Func<bool> done, Action complete)
		{
			Pending p = new Pending { Call = call, Done = done, Complete = complete, Deadline = DateTime.UtcNow + SettleLimit(call) };
			lock (pendingGate)
				pending.Add(p);
			poke.Set();
		}

		private void SettleLoop()
		{
			while (!stopping)
			{
				poke.WaitOne(SettlePoll);
				if (stopping)
					return;
				List<Pending> ready = new List<Pending>();
				DateTime now = DateTime.UtcNow;
				lock (pendingGate)
				{
					for (int i = pending.Count - 1; i >= 0; i--)
					{
						Pending p = pending[i];
						bool done;
						try { done = now >= p.Deadline || p.Done(); }
						catch (Exception) { done = true; }
						if (done)
						{
							pending.RemoveAt(i);
							ready.Insert(0, p);
						}
					}
				}
				foreach (Pending p in ready)
				{
					try
					{
						p.Complete();
					}
					catch (TradeBridgeError e)
					{
						p.Call.Fail(e);
					}
					catch (Exception e)
					{
						log("completing " + p.Call.Method + " failed: " + e.GetType().Name);
						p.Call.Fail(TradeBridgeError.Internal("the add-on failed to finish the request"));
					}
				}
				FlushQuotes(now);
				FlushAccounts(now);
				Forget(now);
			}
		}

		// ---- lookups ----

		private static Cbi.Account FindAccount(string name)
		{
			Cbi.Account[] all;
			lock (Cbi.Account.All)
				all = TradeBridgeMapping.ToArray(Cbi.Account.All);
			foreach (Cbi.Account a in all)
				if (a != null && string.Equals(a.Name, name, StringComparison.Ordinal))
					return a;
			throw new TradeBridgeError(TradeBridgeProtocol.CodeAccountNotFound, "no such account in NinjaTrader");
		}

		private static void RequireConnected(Cbi.Account a)
		{
			if (a.Connection == null || a.Connection.Status != Cbi.ConnectionStatus.Connected)
				throw new TradeBridgeError(TradeBridgeProtocol.CodeNotConnected, "the account's connection is not connected");
		}

		private static Cbi.Order[] OrdersOf(Cbi.Account a)
		{
			lock (a.Orders)
				return TradeBridgeMapping.ToArray(a.Orders);
		}

		private Cbi.Order FindOrder(Cbi.Account a, string orderId)
		{
			Cbi.Order found = null;
			foreach (Cbi.Order o in OrdersOf(a))
			{
				if (o == null || ids.IdOf(o) != orderId)
					continue;
				// Prefer an order still working over an older one of the same id.
				if (found == null || Terminal(found.OrderState))
					found = o;
			}
			if (found == null)
				throw new TradeBridgeError(TradeBridgeProtocol.CodeOrderNotFound, "no such order on the account");
			return found;
		}

		private bool KnownOrderId(string orderId)
		{
			Cbi.Account[] all;
			lock (Cbi.Account.All)
				all = TradeBridgeMapping.ToArray(Cbi.Account.All);
			foreach (Cbi.Account a in all)
				foreach (Cbi.Order o in OrdersOf(a))
					if (o != null && ids.IdOf(o) == orderId)
						return true;
			return false;
		}

		private static bool Terminal(Cbi.OrderState s)
		{
			return s == Cbi.OrderState.Cancelled || s == Cbi.OrderState.Filled || s == Cbi.OrderState.Rejected;
		}

		private static bool InFlight(Cbi.OrderState s)
		{
			return s == Cbi.OrderState.Initialized || s == Cbi.OrderState.Submitted ||
				s == Cbi.OrderState.ChangePending || s == Cbi.OrderState.ChangeSubmitted ||
				s == Cbi.OrderState.CancelPending || s == Cbi.OrderState.CancelSubmitted;
		}

		private int ErrorCount(Cbi.Order o)
		{
			lock (gate)
			{
				int n;
				return orderErrors.TryGetValue(o, out n) ? n : 0;
			}
		}

		private string ErrorText(Cbi.Order o)
		{
			lock (gate)
			{
				string s;
				orderErrorText.TryGetValue(o, out s);
				return string.IsNullOrEmpty(s) ? "NinjaTrader rejected the order" : s;
			}
		}

		private int Executed(Cbi.Order o)
		{
			lock (gate)
			{
				int n;
				return executed.TryGetValue(o, out n) ? n : 0;
			}
		}

		// A price the agent sent, checked against the tick size: a price within a
		// millionth of a tick of a tick is that tick; any other is refused.
		private static double TickPrice(Cbi.Instrument ins, double price)
		{
			if (price <= 0)
				throw TradeBridgeError.BadRequest("a price must be positive");
			double tick = ins.MasterInstrument.TickSize;
			if (tick <= 0)
				return price;
			double rounded = ins.MasterInstrument.RoundToTickSize(price);
			if (Math.Abs(rounded - price) > tick * 1e-6)
				throw TradeBridgeError.BadRequest("a price is not a multiple of the tick size");
			return rounded;
		}

		private static void CheckPart(string s)
		{
			if (s != null && s.IndexOf(TradeBridgeOrderName.Separator) >= 0)
				throw TradeBridgeError.BadRequest("name and strategyTag may not contain '|'");
		}

		// ---- snapshot ----

		private void Snapshot(TradeBridgeCall call)
		{
			// Events numbered up to seq were published before any state below is
			// read, so the snapshot reflects them; later events follow the reply.
			ulong seq = server.CurrentSeq;
			DateTime sessionStart = TradeBridgeMapping.SessionStartUtc(DateTime.UtcNow);
			SubscribeAccounts();
			Cbi.Connection[] conns;
			lock (Cbi.Connection.Connections)
				conns = TradeBridgeMapping.ToArray(Cbi.Connection.Connections);
			Cbi.Account[] all;
			lock (Cbi.Account.All)
				all = TradeBridgeMapping.ToArray(Cbi.Account.All);

			TradeBridgeJsonWriter w = new TradeBridgeJsonWriter();
			w.BeginObject();
			w.Prop("seq", seq);
			w.Key("connections").BeginArray();
			foreach (Cbi.Connection c in conns)
				if (c != null)
					TradeBridgeMapping.Connection(w, c);
			w.EndArray();
			w.Key("accounts").BeginArray();
			foreach (Cbi.Account a in all)
				if (a != null)
					TradeBridgeMapping.Account(w, a);
			w.EndArray();
			w.Key("positions").BeginArray();
			foreach (Cbi.Account a in all)
			{
				if (a == null) continue;
				Cbi.Position[] ps;
				lock (a.Positions)
					ps = TradeBridgeMapping.ToArray(a.Positions);
				foreach (Cbi.Position p in ps)
					if (p != null && p.MarketPosition != Cbi.MarketPosition.Flat && p.Quantity != 0)
						TradeBridgeMapping.Position(w, a.Name, p, false);
			}
			w.EndArray();
			w.Key("orders").BeginArray();
			foreach (Cbi.Account a in all)
			{
				if (a == null) continue;
				foreach (Cbi.Order o in OrdersOf(a))
					if (o != null && (!Terminal(o.OrderState) || TradeBridgeMapping.ToUtc(o.Time) >= sessionStart))
						TradeBridgeMapping.Order(w, o, ids);
			}
			w.EndArray();
			w.Key("executions").BeginArray();
			foreach (Cbi.Account a in all)
			{
				if (a == null) continue;
				Cbi.Execution[] es;
				lock (a.Executions)
					es = TradeBridgeMapping.ToArray(a.Executions);
				foreach (Cbi.Execution e in es)
					if (e != null && TradeBridgeMapping.ToUtc(e.Time) >= sessionStart)
						TradeBridgeMapping.Execution(w, e, ids);
			}
			w.EndArray();
			w.Key("strategies").BeginArray();
			foreach (Cbi.Account a in all)
			{
				if (a == null) continue;
				NinjaTrader.NinjaScript.StrategyBase[] ss;
				lock (a.Strategies)
					ss = TradeBridgeMapping.ToArray(a.Strategies);
				foreach (NinjaTrader.NinjaScript.StrategyBase s in ss)
					if (s != null)
						TradeBridgeMapping.Strategy(w, s);
			}
			w.EndArray();
			w.EndObject();
			string result = w.ToString();
			call.Reply(delegate (TradeBridgeJsonWriter r) { r.Raw(result); });
		}

		// ---- orders ----

		private void SubmitOrder(TradeBridgeCall call)
		{
			TradeBridgeParams p = call.Params;
			string accountName = p.RequiredString("account");
			string instrumentName = p.RequiredString("instrument");
			Cbi.OrderAction action = TradeBridgeMapping.ParseAction(p.RequiredString("action"));
			Cbi.OrderType type = TradeBridgeMapping.ParseOrderType(p.RequiredString("orderType"));
			long quantity = p.Int("quantity", 0);
			if (quantity < 1 || quantity > int.MaxValue)
				throw TradeBridgeError.BadRequest("quantity must be a whole number of at least 1");
			double limit = p.Number("limitPrice", 0), stop = p.Number("stopPrice", 0);
			Cbi.TimeInForce tif = TradeBridgeMapping.ParseTimeInForce(p.String("timeInForce"));
			string oco = p.String("oco") ?? "";
			string orderId = p.RequiredString("orderId");
			if (!TradeBridgeOrderName.ValidOrderId(orderId))
				throw TradeBridgeError.BadRequest("orderId must be 1 to 64 characters of A-Z a-z 0-9 . _ : -");
			string name = p.String("name") ?? "";
			string tag = p.String("strategyTag") ?? "";
			string atmTemplate = p.String("atmTemplate") ?? "";
			CheckPart(name);
			CheckPart(tag);

			Cbi.Account account = FindAccount(accountName);
			RequireConnected(account);
			Cbi.Instrument ins = TradeBridgeInstruments.Resolve(instrumentName);
			switch (type)
			{
				case Cbi.OrderType.Market:
					limit = stop = 0;
					break;
				case Cbi.OrderType.Limit:
					limit = TickPrice(ins, limit);
					stop = 0;
					break;
				case Cbi.OrderType.StopMarket:
					stop = TickPrice(ins, stop);
					limit = 0;
					break;
				case Cbi.OrderType.StopLimit:
					limit = TickPrice(ins, limit);
					stop = TickPrice(ins, stop);
					break;
			}

			string ntName;
			if (atmTemplate.Length > 0)
			{
				if (!AtmTemplateExists(atmTemplate))
					throw new TradeBridgeError(TradeBridgeProtocol.CodeTemplateNotFound, "no ATM template of that name");
				ntName = "Entry"; // NinjaTrader starts an ATM strategy only on an order of this name
			}
			else
			{
				string tail = TradeBridgeOrderName.Make("", orderId, tag);
				if (tail.Length > MaxOrderName)
					throw TradeBridgeError.BadRequest("orderId and strategyTag are together longer than a NinjaTrader order name may be");
				// The signal name is what gives way when the whole is too long for NinjaTrader.
				if (name.Length + tail.Length > MaxOrderName)
					name = name.Substring(0, MaxOrderName - tail.Length);
				ntName = TradeBridgeOrderName.Make(name, orderId, tag);
			}

			if (KnownOrderId(orderId) || !ids.Claim(orderId))
				throw new TradeBridgeError(TradeBridgeProtocol.CodeOrderRejected, "an order with this id already exists");

			Cbi.Order order;
			NinjaTrader.NinjaScript.AtmStrategy atm = null;
			try
			{
				order = account.CreateOrder(ins, action, type, Cbi.OrderEntry.Automated, tif, (int)quantity, limit, stop, oco,
					ntName, NinjaTrader.Core.Globals.MaxDate, null);
				if (order == null)
					throw new TradeBridgeError(TradeBridgeProtocol.CodeOrderRejected, "NinjaTrader did not create the order");
				if (atmTemplate.Length > 0)
				{
					ids.RememberAtmEntry(order, orderId, name, tag);
					atm = NinjaTrader.NinjaScript.AtmStrategy.StartAtmStrategy(atmTemplate, order);
					if (atm == null)
						throw new TradeBridgeError(TradeBridgeProtocol.CodeOrderRejected, "NinjaTrader did not start the ATM strategy");
					// Some versions send the entry themselves, others leave it to the caller;
					// an order already sent is not Initialized any more.
					if (order.OrderState == Cbi.OrderState.Initialized)
						account.Submit(new[] { order });
				}
				else
					account.Submit(new[] { order });
			}
			catch (TradeBridgeError)
			{
				ids.Release(orderId);
				throw;
			}
			catch (Exception e)
			{
				ids.Release(orderId);
				log("submitOrder: NinjaTrader refused the order: " + e.GetType().Name);
				throw new TradeBridgeError(TradeBridgeProtocol.CodeOrderRejected, "NinjaTrader refused the order");
			}

			Cbi.Order o = order;
			NinjaTrader.NinjaScript.AtmStrategy started = atm;
			Settle(call,
				delegate
				{
					Cbi.OrderState s = o.OrderState;
					if (s == Cbi.OrderState.Initialized || s == Cbi.OrderState.Submitted)
						return false;
					if (s == Cbi.OrderState.Filled || s == Cbi.OrderState.PartFilled)
						return Executed(o) >= o.Filled;
					return true;
				},
				delegate
				{
					if (o.OrderState == Cbi.OrderState.Rejected)
					{
						PublishOrder(o);
						call.Fail(new TradeBridgeError(TradeBridgeProtocol.CodeOrderRejected, ErrorText(o)));
						return;
					}
					PublishOrder(o);
					if (o.Filled > 0)
						PublishPositionOf(account, o.Instrument);
					if (started != null)
						PublishStrategy(started);
					call.Reply(delegate (TradeBridgeJsonWriter w)
					{
						w.BeginObject().Key("order");
						TradeBridgeMapping.Order(w, o, ids);
						w.EndObject();
					});
				});
		}

		private void CancelOrder(TradeBridgeCall call)
		{
			Cbi.Account account = FindAccount(call.Params.RequiredString("account"));
			string orderId = call.Params.RequiredString("orderId");
			Cbi.Order o = FindOrder(account, orderId);
			if (Terminal(o.OrderState))
				throw new TradeBridgeError(TradeBridgeProtocol.CodeOrderRejected, "the order has ended and cannot be cancelled");
			RequireConnected(account);
			int errors = ErrorCount(o);
			account.Cancel(new[] { o });
			Settle(call,
				delegate { return Terminal(o.OrderState) || ErrorCount(o) > errors; },
				delegate
				{
					PublishOrder(o);
					if (o.OrderState == Cbi.OrderState.Filled)
					{
						PublishPositionOf(account, o.Instrument);
						call.Fail(new TradeBridgeError(TradeBridgeProtocol.CodeOrderRejected, "the order filled before it could be cancelled"));
						return;
					}
					if (!Terminal(o.OrderState) && ErrorCount(o) > errors)
					{
						call.Fail(new TradeBridgeError(TradeBridgeProtocol.CodeOrderRejected, ErrorText(o)));
						return;
					}
					ReplyOrder(call, o);
				});
		}

		private void ChangeOrder(TradeBridgeCall call)
		{
			TradeBridgeParams p = call.Params;
			Cbi.Account account = FindAccount(p.RequiredString("account"));
			string orderId = p.RequiredString("orderId");
			long quantity = p.Int("quantity", 0);
			double limit = p.Number("limitPrice", 0), stop = p.Number("stopPrice", 0);
			if (quantity < 0 || quantity > int.MaxValue || limit < 0 || stop < 0)
				throw TradeBridgeError.BadRequest("quantity and prices may not be negative");
			Cbi.Order o = FindOrder(account, orderId);
			if (Terminal(o.OrderState))
				throw new TradeBridgeError(TradeBridgeProtocol.CodeOrderRejected, "the order has ended and cannot be changed");
			RequireConnected(account);
			if (limit > 0)
			{
				if (o.OrderType != Cbi.OrderType.Limit && o.OrderType != Cbi.OrderType.StopLimit)
					throw TradeBridgeError.BadRequest("the order has no limit price");
				limit = TickPrice(o.Instrument, limit);
			}
			if (stop > 0)
			{
				if (o.OrderType != Cbi.OrderType.StopMarket && o.OrderType != Cbi.OrderType.StopLimit)
					throw TradeBridgeError.BadRequest("the order has no stop price");
				stop = TickPrice(o.Instrument, stop);
			}
			int wantQty = quantity > 0 ? (int)quantity : o.Quantity;
			double wantLimit = limit > 0 ? limit : o.LimitPrice;
			double wantStop = stop > 0 ? stop : o.StopPrice;
			int errors = ErrorCount(o);
			o.QuantityChanged = wantQty;
			o.LimitPriceChanged = wantLimit;
			o.StopPriceChanged = wantStop;
			account.Change(new[] { o });
			Settle(call,
				delegate
				{
					if (Terminal(o.OrderState) || ErrorCount(o) > errors)
						return true;
					if (InFlight(o.OrderState))
						return false;
					double eps = o.Instrument.MasterInstrument.TickSize * 1e-6;
					return o.Quantity == wantQty && Math.Abs(o.LimitPrice - wantLimit) <= eps && Math.Abs(o.StopPrice - wantStop) <= eps;
				},
				delegate
				{
					PublishOrder(o);
					if (ErrorCount(o) > errors)
					{
						call.Fail(new TradeBridgeError(TradeBridgeProtocol.CodeOrderRejected, ErrorText(o)));
						return;
					}
					if (o.Filled > 0)
						PublishPositionOf(account, o.Instrument);
					ReplyOrder(call, o);
				});
		}

		private void ReplyOrder(TradeBridgeCall call, Cbi.Order o)
		{
			call.Reply(delegate (TradeBridgeJsonWriter w)
			{
				w.BeginObject().Key("order");
				TradeBridgeMapping.Order(w, o, ids);
				w.EndObject();
			});
		}

		private void Flatten(TradeBridgeCall call)
		{
			Cbi.Account account = FindAccount(call.Params.RequiredString("account"));
			Cbi.Instrument ins = TradeBridgeInstruments.Resolve(call.Params.RequiredString("instrument"));
			RequireConnected(account);
			account.Flatten(new[] { ins });
			Settle(call,
				delegate
				{
					if (PositionOf(account, ins) != null)
						return false;
					foreach (Cbi.Order o in OrdersOf(account))
						if (o != null && o.Instrument == ins && !Terminal(o.OrderState))
							return false;
					return true;
				},
				delegate
				{
					foreach (Cbi.Order o in OrdersOf(account))
						if (o != null && o.Instrument == ins && TradeBridgeMapping.ToUtc(o.Time) >= call.ReceivedUtc.AddSeconds(-1))
							PublishOrder(o);
					PublishPositionOf(account, ins);
					call.Reply(delegate (TradeBridgeJsonWriter w) { w.BeginObject().EndObject(); });
				});
		}

		private static Cbi.Position PositionOf(Cbi.Account a, Cbi.Instrument ins)
		{
			Cbi.Position[] ps;
			lock (a.Positions)
				ps = TradeBridgeMapping.ToArray(a.Positions);
			foreach (Cbi.Position p in ps)
				if (p != null && p.Instrument == ins && p.MarketPosition != Cbi.MarketPosition.Flat && p.Quantity != 0)
					return p;
			return null;
		}

		// ---- market data ----

		private void InstrumentInfo(TradeBridgeCall call)
		{
			Cbi.Instrument ins = TradeBridgeInstruments.Resolve(call.Params.RequiredString("instrument"));
			TradeBridgeJsonWriter w = new TradeBridgeJsonWriter();
			TradeBridgeInstruments.Write(w, ins);
			string s = w.ToString();
			call.Reply(delegate (TradeBridgeJsonWriter r) { r.Raw(s); });
		}

		private void Quote(TradeBridgeCall call)
		{
			Cbi.Instrument ins = TradeBridgeInstruments.Resolve(call.Params.RequiredString("instrument"));
			TradeBridgeJsonWriter w = new TradeBridgeJsonWriter();
			TradeBridgeMapping.Quote(w, ins);
			string s = w.ToString();
			call.Reply(delegate (TradeBridgeJsonWriter r) { r.Raw(s); });
		}

		private void Subscribe(TradeBridgeCall call)
		{
			List<Cbi.Instrument> list = new List<Cbi.Instrument>();
			foreach (string n in call.Params.Strings("instruments"))
				list.Add(TradeBridgeInstruments.Resolve(n));
			foreach (Cbi.Instrument ins in list)
			{
				bool add;
				lock (gate)
				{
					add = !quoteSubs.ContainsKey(ins.FullName);
					if (add)
						quoteSubs[ins.FullName] = ins;
					quoteDirty.Add(ins.FullName);
				}
				if (add)
				{
					Cbi.Instrument i = ins;
					// The market data events of an instrument are subscribed on its own dispatcher.
					i.Dispatcher.InvokeAsync(delegate { i.MarketData.Update += OnMarketData; });
				}
			}
			call.Reply(delegate (TradeBridgeJsonWriter w) { w.BeginObject().EndObject(); });
		}

		private void Unsubscribe(TradeBridgeCall call)
		{
			List<Cbi.Instrument> list = new List<Cbi.Instrument>();
			foreach (string n in call.Params.Strings("instruments"))
				list.Add(TradeBridgeInstruments.Resolve(n));
			foreach (Cbi.Instrument ins in list)
			{
				bool had;
				lock (gate)
				{
					had = quoteSubs.Remove(ins.FullName);
					quoteDirty.Remove(ins.FullName);
				}
				if (had)
					UnsubscribeQuotes(ins);
			}
			call.Reply(delegate (TradeBridgeJsonWriter w) { w.BeginObject().EndObject(); });
		}

		private void UnsubscribeQuotes(Cbi.Instrument ins)
		{
			try
			{
				ins.Dispatcher.InvokeAsync(delegate
				{
					try { ins.MarketData.Update -= OnMarketData; }
					catch (Exception) { }
				});
			}
			catch (Exception)
			{
			}
		}

		private void OnMarketData(object sender, NinjaTrader.Data.MarketDataEventArgs e)
		{
			try
			{
				if (e == null || e.Instrument == null)
					return;
				lock (gate)
				{
					if (!quoteSubs.ContainsKey(e.Instrument.FullName))
						return;
					quoteDirty.Add(e.Instrument.FullName);
				}
			}
			catch (Exception)
			{
			}
		}

		// Publishes the quotes that changed, at most one per instrument per QuoteInterval.
		private void FlushQuotes(DateTime now)
		{
			List<Cbi.Instrument> due = new List<Cbi.Instrument>();
			lock (gate)
			{
				if (quoteDirty.Count == 0)
					return;
				List<string> done = new List<string>();
				foreach (string name in quoteDirty)
				{
					DateTime last;
					if (quoteSent.TryGetValue(name, out last) && now - last < QuoteInterval)
						continue;
					Cbi.Instrument ins;
					if (quoteSubs.TryGetValue(name, out ins))
						due.Add(ins);
					quoteSent[name] = now;
					done.Add(name);
				}
				foreach (string name in done)
					quoteDirty.Remove(name);
			}
			foreach (Cbi.Instrument ins in due)
			{
				Cbi.Instrument i = ins;
				try { server.Publish(TradeBridgeProtocol.KindQuote, delegate (TradeBridgeJsonWriter w) { TradeBridgeMapping.Quote(w, i); }); }
				catch (Exception e) { log("quote event failed: " + e.GetType().Name); }
			}
		}

		// ---- bars ----

		private static NinjaTrader.Data.BarsPeriod Period(NinjaTrader.Data.BarsPeriodType type, int period)
		{
			return new NinjaTrader.Data.BarsPeriod { BarsPeriodType = type, Value = period, MarketDataType = NinjaTrader.Data.MarketDataType.Last };
		}

		private void Bars(TradeBridgeCall call)
		{
			TradeBridgeParams p = call.Params;
			Cbi.Instrument ins = TradeBridgeInstruments.Resolve(p.RequiredString("instrument"));
			NinjaTrader.Data.BarsPeriodType type = TradeBridgeMapping.ParsePeriodType(p.RequiredString("periodType"));
			long period = p.Int("period", 1);
			long daysBack = p.Int("daysBack", 0);
			long limit = p.Int("limit", 0);
			if (period < 1 || period > 100000 || daysBack < 0 || daysBack > 3650 || limit < 0 || limit > 1000000)
				throw TradeBridgeError.BadRequest("period, daysBack or limit is out of range");
			DateTime fromUtc = DateTime.MinValue, toUtc = DateTime.MaxValue;
			string from = p.String("from"), to = p.String("to");
			if (!string.IsNullOrEmpty(from) && !TradeBridgeTime.TryParse(from, out fromUtc))
				throw TradeBridgeError.BadRequest("from must be an RFC 3339 time");
			if (!string.IsNullOrEmpty(to) && !TradeBridgeTime.TryParse(to, out toUtc))
				throw TradeBridgeError.BadRequest("to must be an RFC 3339 time");
			if (fromUtc > toUtc)
				throw TradeBridgeError.BadRequest("from is after to");
			if (fromUtc == DateTime.MinValue && daysBack > 0)
				fromUtc = DateTime.UtcNow.AddDays(-daysBack);

			NinjaTrader.Data.BarsRequest req;
			if (fromUtc != DateTime.MinValue)
			{
				DateTime toLocal = toUtc == DateTime.MaxValue ? NinjaTrader.Core.Globals.Now : TradeBridgeMapping.FromUtc(toUtc);
				req = new NinjaTrader.Data.BarsRequest(ins, TradeBridgeMapping.FromUtc(fromUtc), toLocal);
			}
			else
				req = new NinjaTrader.Data.BarsRequest(ins, limit > 0 ? (int)limit : 500);
			req.BarsPeriod = Period(type, (int)period);
			req.TradingHours = ins.MasterInstrument.TradingHours;
			int periodValue = (int)period;
			req.Request(delegate (NinjaTrader.Data.BarsRequest r, Cbi.ErrorCode error, string message)
			{
				try
				{
					if (error != Cbi.ErrorCode.NoError)
					{
						call.Fail(TradeBridgeError.Internal("NinjaTrader could not load the bars"));
						return;
					}
					// Keep the bars inside [from, to], then the last `limit` of them.
					NinjaTrader.Data.Bars bars = r.Bars;
					List<int> keep = new List<int>();
					int count = bars == null ? 0 : bars.Count;
					for (int i = 0; i < count; i++)
					{
						DateTime t = TradeBridgeMapping.ToUtc(bars.GetTime(i));
						if (t >= fromUtc && t <= toUtc)
							keep.Add(i);
					}
					if (limit > 0 && keep.Count > limit)
						keep.RemoveRange(0, keep.Count - (int)limit);
					TradeBridgeJsonWriter w = new TradeBridgeJsonWriter();
					w.BeginObject();
					w.Prop("instrument", ins.FullName);
					w.Prop("periodType", TradeBridgeMapping.PeriodTypeName(type));
					w.Prop("period", periodValue);
					w.Prop("count", keep.Count);
					w.Key("bars").BeginArray();
					foreach (int i in keep)
						TradeBridgeMapping.Bar(w, bars.GetTime(i), bars.GetOpen(i), bars.GetHigh(i), bars.GetLow(i), bars.GetClose(i),
							bars.GetVolume(i), type, periodValue);
					w.EndArray();
					w.EndObject();
					string s = w.ToString();
					call.Reply(delegate (TradeBridgeJsonWriter o) { o.Raw(s); });
				}
				catch (Exception e)
				{
					log("bars failed: " + e.GetType().Name);
					call.Fail(TradeBridgeError.Internal("the add-on could not read the bars"));
				}
				finally
				{
					ui.InvokeAsync(delegate
					{
						try { r.Dispose(); }
						catch (Exception) { }
					});
				}
			});
		}

		private static string BarKey(Cbi.Instrument ins, NinjaTrader.Data.BarsPeriodType type, int period)
		{
			return ins.FullName + "|" + TradeBridgeMapping.PeriodTypeName(type) + "|" + period.ToString(CultureInfo.InvariantCulture);
		}

		private void SubscribeBars(TradeBridgeCall call)
		{
			TradeBridgeParams p = call.Params;
			Cbi.Instrument ins = TradeBridgeInstruments.Resolve(p.RequiredString("instrument"));
			NinjaTrader.Data.BarsPeriodType type = TradeBridgeMapping.ParsePeriodType(p.RequiredString("periodType"));
			long period = p.Int("period", 1);
			if (period < 1 || period > 100000)
				throw TradeBridgeError.BadRequest("period is out of range");
			BarSub sub = new BarSub { Instrument = ins, Type = type, Period = (int)period };
			sub.Key = BarKey(ins, type, sub.Period);
			lock (gate)
			{
				if (barSubs.ContainsKey(sub.Key))
				{
					call.Reply(delegate (TradeBridgeJsonWriter w) { w.BeginObject().EndObject(); });
					return;
				}
				barSubs[sub.Key] = sub;
			}
			sub.Request = new NinjaTrader.Data.BarsRequest(ins, 2);
			sub.Request.BarsPeriod = Period(type, sub.Period);
			sub.Request.TradingHours = ins.MasterInstrument.TradingHours;
			sub.Request.Update += delegate (object sender, NinjaTrader.Data.BarsUpdateEventArgs e) { OnBarsUpdate(sub, e); };
			sub.Request.Request(delegate (NinjaTrader.Data.BarsRequest r, Cbi.ErrorCode error, string message)
			{
				if (error == Cbi.ErrorCode.NoError)
				{
					call.Reply(delegate (TradeBridgeJsonWriter w) { w.BeginObject().EndObject(); });
					return;
				}
				lock (gate)
					barSubs.Remove(sub.Key);
				ui.InvokeAsync(delegate { DisposeBars(sub); });
				call.Fail(TradeBridgeError.Internal("NinjaTrader could not subscribe to the bars"));
			});
		}

		private void UnsubscribeBars(TradeBridgeCall call)
		{
			TradeBridgeParams p = call.Params;
			Cbi.Instrument ins = TradeBridgeInstruments.Resolve(p.RequiredString("instrument"));
			NinjaTrader.Data.BarsPeriodType type = TradeBridgeMapping.ParsePeriodType(p.RequiredString("periodType"));
			long period = p.Int("period", 1);
			if (period < 1 || period > 100000)
				throw TradeBridgeError.BadRequest("period is out of range");
			BarSub sub;
			lock (gate)
			{
				string key = BarKey(ins, type, (int)period);
				if (barSubs.TryGetValue(key, out sub))
					barSubs.Remove(key);
			}
			if (sub != null)
				DisposeBars(sub);
			call.Reply(delegate (TradeBridgeJsonWriter w) { w.BeginObject().EndObject(); });
		}

		private void DisposeBars(BarSub sub)
		{
			try
			{
				if (sub.Request != null)
					sub.Request.Dispose();
			}
			catch (Exception)
			{
			}
		}

		// Publishes the bars an update touched: every one before the newest is final.
		private void OnBarsUpdate(BarSub sub, NinjaTrader.Data.BarsUpdateEventArgs e)
		{
			try
			{
				lock (gate)
					if (!barSubs.ContainsKey(sub.Key) || barSubs[sub.Key] != sub)
						return;
				NinjaTrader.Data.BarsSeries s = e.BarsSeries;
				int from = sub.LastIndex >= 0 ? Math.Min(sub.LastIndex, e.MinIndex) : e.MinIndex;
				if (from < 0)
					from = 0;
				DateTime now = DateTime.UtcNow;
				for (int i = from; i <= e.MaxIndex; i++)
				{
					int idx = i;
					bool closed = idx < e.MaxIndex;
					if (!closed)
					{
						if (idx == sub.FormingIndex && now - sub.FormingSentUtc < QuoteInterval)
							continue;
						sub.FormingIndex = idx;
						sub.FormingSentUtc = now;
					}
					server.Publish(TradeBridgeProtocol.KindBar, delegate (TradeBridgeJsonWriter w)
					{
						w.BeginObject();
						w.Prop("instrument", sub.Instrument.FullName);
						w.Prop("periodType", TradeBridgeMapping.PeriodTypeName(sub.Type));
						w.Prop("period", sub.Period);
						w.Key("bar");
						TradeBridgeMapping.Bar(w, s.GetTime(idx), s.GetOpen(idx), s.GetHigh(idx), s.GetLow(idx), s.GetClose(idx),
							VolumeAt(sub, idx), sub.Type, sub.Period);
						w.Prop("closed", closed);
						w.EndObject();
					});
				}
				sub.LastIndex = e.MaxIndex;
			}
			catch (Exception x)
			{
				log("bar event failed: " + x.GetType().Name);
			}
		}

		// The documentation shows BarsSeries with times and prices only; volumes come from the request's Bars.
		private static long VolumeAt(BarSub sub, int idx)
		{
			try
			{
				NinjaTrader.Data.Bars b = sub.Request.Bars;
				return b != null && idx < b.Count ? b.GetVolume(idx) : 0;
			}
			catch (Exception)
			{
				return 0;
			}
		}

		// ---- ATM templates ----

		private static string AtmTemplateDir()
		{
			return Path.Combine(Path.Combine(NinjaTrader.Core.Globals.UserDataDir, "templates"), "AtmStrategy");
		}

		private static bool ValidTemplateName(string name)
		{
			return name.Length > 0 && name.Length <= 128 && name.IndexOfAny(Path.GetInvalidFileNameChars()) < 0 &&
				name != "." && name != "..";
		}

		private static bool AtmTemplateExists(string name)
		{
			return ValidTemplateName(name) && File.Exists(Path.Combine(AtmTemplateDir(), name + ".xml"));
		}

		private void AtmTemplates(TradeBridgeCall call)
		{
			string dir = AtmTemplateDir();
			string[] files = Directory.Exists(dir) ? Directory.GetFiles(dir, "*.xml") : new string[0];
			Array.Sort(files, StringComparer.OrdinalIgnoreCase);
			TradeBridgeJsonWriter w = new TradeBridgeJsonWriter();
			w.BeginObject().Key("templates").BeginArray();
			foreach (string f in files)
			{
				try
				{
					WriteAtmTemplate(w, Path.GetFileNameWithoutExtension(f), File.ReadAllText(f));
				}
				catch (Exception)
				{
					// A template file that cannot be read is left out.
				}
			}
			w.EndArray().EndObject();
			string s = w.ToString();
			call.Reply(delegate (TradeBridgeJsonWriter r) { r.Raw(s); });
		}

		/// <summary>
		/// An ATM template record from a template file. NinjaTrader does not
		/// publish the file's schema: elements are found by name, brackets are
		/// reported only for templates that count in ticks.
		/// </summary>
		public static void WriteAtmTemplate(TradeBridgeJsonWriter w, string name, string xml)
		{
			XmlDocument doc = new XmlDocument();
			doc.XmlResolver = null;
			doc.LoadXml(xml);
			string mode = FirstText(doc, "CalculationMode");
			bool ticks = string.IsNullOrEmpty(mode) || mode == "Ticks";
			List<int[]> brackets = new List<int[]>();
			int total = 0;
			foreach (XmlNode b in doc.GetElementsByTagName("Bracket"))
			{
				int q = ChildInt(b, "Quantity"), sl = ChildInt(b, "StopLoss"), pt = ChildInt(b, "Target");
				total += q;
				brackets.Add(new[] { q, sl, pt });
			}
			int entry = 0;
			int.TryParse(FirstText(doc, "EntryQuantity"), NumberStyles.Integer, CultureInfo.InvariantCulture, out entry);
			string tif = FirstText(doc, "TimeInForce");
			w.BeginObject();
			w.Prop("name", name);
			w.Prop("quantity", entry > 0 ? entry : total);
			w.Prop("timeInForce", tif == "Gtc" ? "Gtc" : "Day");
			w.Key("brackets").BeginArray();
			if (ticks)
				foreach (int[] b in brackets)
					w.BeginObject().Prop("quantity", b[0]).Prop("stopLossTicks", b[1]).Prop("profitTargetTicks", b[2]).EndObject();
			w.EndArray();
			w.EndObject();
		}

		private static string FirstText(XmlDocument doc, string tag)
		{
			XmlNodeList l = doc.GetElementsByTagName(tag);
			return l.Count > 0 ? l[0].InnerText.Trim() : "";
		}

		private static int ChildInt(XmlNode n, string tag)
		{
			foreach (XmlNode c in n.ChildNodes)
			{
				if (c.LocalName != tag)
					continue;
				double d;
				if (double.TryParse(c.InnerText.Trim(), NumberStyles.Float, CultureInfo.InvariantCulture, out d))
					return (int)Math.Round(d);
			}
			return 0;
		}

		// ---- strategies ----

		private void StartStrategy(TradeBridgeCall call)
		{
			TradeBridgeParams p = call.Params;
			FindAccount(p.RequiredString("account"));
			string cls = p.RequiredString("class");
			p.RequiredString("instrument");
			bool known = false;
			foreach (System.Reflection.Assembly asm in AppDomain.CurrentDomain.GetAssemblies())
			{
				Type[] types;
				try { types = asm.GetTypes(); }
				catch (Exception) { continue; }
				foreach (Type t in types)
					if (t.Name == cls && !t.IsAbstract && typeof(NinjaTrader.NinjaScript.StrategyBase).IsAssignableFrom(t) &&
						!typeof(NinjaTrader.NinjaScript.AtmStrategy).IsAssignableFrom(t))
						known = true;
			}
			if (!known)
				throw new TradeBridgeError(TradeBridgeProtocol.CodeStrategyClassUnknown, "no strategy of that class is installed");
			// NinjaTrader documents no way for an add-on to configure and enable a
			// NinjaScript strategy; this version does not guess one.
			throw TradeBridgeError.Internal("starting a NinjaScript strategy from the agent is not supported by this add-on; start it in NinjaTrader");
		}

		private void SetStrategyState(TradeBridgeCall call)
		{
			TradeBridgeParams p = call.Params;
			Cbi.Account account = FindAccount(p.RequiredString("account"));
			string id = p.RequiredString("id");
			string action = p.RequiredString("action");
			if (action != "enable" && action != "disable" && action != "close")
				throw TradeBridgeError.BadRequest("action must be enable, disable or close");
			NinjaTrader.NinjaScript.StrategyBase s = null;
			NinjaTrader.NinjaScript.StrategyBase[] all;
			lock (account.Strategies)
				all = TradeBridgeMapping.ToArray(account.Strategies);
			foreach (NinjaTrader.NinjaScript.StrategyBase x in all)
				if (x != null && x.Id.ToString(CultureInfo.InvariantCulture) == id)
					s = x;
			if (s == null)
				throw new TradeBridgeError(TradeBridgeProtocol.CodeStrategyNotFound, "no such strategy on the account");
			if (TradeBridgeMapping.StrategyTerminal(s))
				throw new TradeBridgeError(TradeBridgeProtocol.CodeStrategyTerminal, "the strategy has ended");
			bool atm = s is NinjaTrader.NinjaScript.AtmStrategy;
			switch (action)
			{
				case "close":
					RequireConnected(account);
					// Cancels the strategy's orders, closes its position and ends it
					// (StrategyBase.CloseStrategy(string), looked up at run time).
					TradeBridgeReflect.Call(s, "CloseStrategy", "Close");
					break;
				case "disable":
					if (atm)
						throw TradeBridgeError.BadRequest("an ATM strategy can only be closed");
					// checked only against the stand-ins: SetState(State.Terminated) disables a running
					// strategy (looked up at run time).
					TradeBridgeReflect.Call(s, "SetState", State.Terminated);
					break;
				case "enable":
					if (atm)
						throw TradeBridgeError.BadRequest("an ATM strategy can only be closed");
					if (TradeBridgeMapping.StrategyState(s) == "Enabled")
						break;
					throw TradeBridgeError.Internal("enabling a NinjaScript strategy from the agent is not supported by this add-on; enable it in NinjaTrader");
			}
			NinjaTrader.NinjaScript.StrategyBase st = s;
			Settle(call,
				delegate { return action == "enable" || TradeBridgeMapping.StrategyTerminal(st); },
				delegate
				{
					PublishStrategy(st);
					call.Reply(delegate (TradeBridgeJsonWriter w)
					{
						w.BeginObject().Key("strategy");
						TradeBridgeMapping.Strategy(w, st);
						w.EndObject();
					});
				});
		}

		// ---------------------------------------------------------------- NinjaTrader's events

		private void PublishOrder(Cbi.Order o)
		{
			server.Publish(TradeBridgeProtocol.KindOrder, delegate (TradeBridgeJsonWriter w) { TradeBridgeMapping.Order(w, o, ids); });
		}

		private void PublishStrategy(NinjaTrader.NinjaScript.StrategyBase s)
		{
			server.Publish(TradeBridgeProtocol.KindStrategy, delegate (TradeBridgeJsonWriter w) { TradeBridgeMapping.Strategy(w, s); });
		}

		private void PublishPositionOf(Cbi.Account a, Cbi.Instrument ins)
		{
			if (ins == null)
				return;
			Cbi.Position p = PositionOf(a, ins);
			string name = a.Name;
			if (p == null)
				server.Publish(TradeBridgeProtocol.KindPosition, delegate (TradeBridgeJsonWriter w) { TradeBridgeMapping.FlatPosition(w, name, ins); });
			else
				server.Publish(TradeBridgeProtocol.KindPosition, delegate (TradeBridgeJsonWriter w) { TradeBridgeMapping.Position(w, name, p, false); });
		}

		private void OnOrderUpdate(object sender, Cbi.OrderEventArgs e)
		{
			try
			{
				Cbi.Order o = e.Order;
				if (o == null)
					return;
				if (e.Error != Cbi.ErrorCode.NoError || e.OrderState == Cbi.OrderState.Rejected)
				{
					lock (gate)
					{
						int n;
						orderErrors.TryGetValue(o, out n);
						orderErrors[o] = n + 1;
						orderErrorText[o] = e.Comment ?? "";
					}
				}
				PublishOrder(o);
				if (Terminal(o.OrderState))
					ForgetLater(o);
				poke.Set();
			}
			catch (Exception x)
			{
				log("order event failed: " + x.GetType().Name);
			}
		}

		// Bookkeeping of an ended order is dropped (by the settler) once nothing can wait for it any more.
		private void ForgetLater(Cbi.Order o)
		{
			lock (gate)
				forget.Add(new KeyValuePair<Cbi.Order, DateTime>(o, DateTime.UtcNow + SettleMax + SettleMax));
		}

		private void Forget(DateTime now)
		{
			lock (gate)
			{
				for (int i = forget.Count - 1; i >= 0; i--)
				{
					if (forget[i].Value > now)
						continue;
					Cbi.Order o = forget[i].Key;
					forget.RemoveAt(i);
					orderErrors.Remove(o);
					orderErrorText.Remove(o);
					executed.Remove(o);
				}
			}
		}

		private void OnExecutionUpdate(object sender, Cbi.ExecutionEventArgs e)
		{
			try
			{
				Cbi.Execution x = e.Execution;
				if (x == null)
					return;
				if (x.Order != null && e.Operation == Cbi.Operation.Add)
				{
					lock (gate)
					{
						int n;
						executed.TryGetValue(x.Order, out n);
						executed[x.Order] = n + x.Quantity;
					}
				}
				server.Publish(TradeBridgeProtocol.KindExecution, delegate (TradeBridgeJsonWriter w) { TradeBridgeMapping.Execution(w, x, ids); });
				poke.Set();
			}
			catch (Exception ex)
			{
				log("execution event failed: " + ex.GetType().Name);
			}
		}

		private void OnPositionUpdate(object sender, Cbi.PositionEventArgs e)
		{
			try
			{
				Cbi.Position p = e.Position;
				if (p == null)
					return;
				Cbi.Account a = p.Account ?? sender as Cbi.Account;
				string name = a == null ? "" : a.Name;
				bool flat = e.Operation == Cbi.Operation.Remove || e.MarketPosition == Cbi.MarketPosition.Flat || e.Quantity == 0;
				server.Publish(TradeBridgeProtocol.KindPosition, delegate (TradeBridgeJsonWriter w) { TradeBridgeMapping.Position(w, name, p, flat); });
				poke.Set();
			}
			catch (Exception x)
			{
				log("position event failed: " + x.GetType().Name);
			}
		}

		private void OnAccountItemUpdate(object sender, Cbi.AccountItemEventArgs e)
		{
			// Values change many times a second: they are coalesced per account.
			Cbi.Account a = e == null ? null : e.Account;
			if (a == null)
				return;
			lock (gate)
				accountDirty.Add(a);
		}

		private void FlushAccounts(DateTime now)
		{
			Cbi.Account[] due;
			lock (gate)
			{
				if (accountDirty.Count == 0 || now < accountFlushAt)
					return;
				due = new Cbi.Account[accountDirty.Count];
				accountDirty.CopyTo(due);
				accountDirty.Clear();
				accountFlushAt = now + AccountInterval;
			}
			foreach (Cbi.Account a in due)
				PublishAccount(a);
		}

		private void PublishAccount(Cbi.Account a)
		{
			try { server.Publish(TradeBridgeProtocol.KindAccount, delegate (TradeBridgeJsonWriter w) { TradeBridgeMapping.Account(w, a); }); }
			catch (Exception e) { log("account event failed: " + e.GetType().Name); }
		}

		private void OnAccountStatusUpdate(object sender, Cbi.AccountStatusEventArgs e)
		{
			try
			{
				SubscribeAccounts();
				if (e != null && e.Account != null)
					PublishAccount(e.Account);
			}
			catch (Exception x)
			{
				log("account status event failed: " + x.GetType().Name);
			}
		}

		private void OnConnectionStatusUpdate(object sender, Cbi.ConnectionStatusEventArgs e)
		{
			try
			{
				SubscribeAccounts();
				if (e == null || e.Connection == null)
					return;
				Cbi.Connection c = e.Connection;
				server.Publish(TradeBridgeProtocol.KindConnection, delegate (TradeBridgeJsonWriter w) { TradeBridgeMapping.Connection(w, c); });
				Cbi.Account[] accts;
				lock (c.Accounts)
					accts = TradeBridgeMapping.ToArray(c.Accounts);
				foreach (Cbi.Account a in accts)
					if (a != null)
						PublishAccount(a);
			}
			catch (Exception x)
			{
				log("connection event failed: " + x.GetType().Name);
			}
		}
	}
}
