// Stand-ins for NinjaTrader 8's NinjaTrader.Cbi types that the TradeBridge
// add-on uses, so that it compiles with Mono outside NinjaTrader. These are
// NOT NinjaTrader's declarations: they follow NinjaTrader's public
// NinjaScript documentation, and their bodies do nothing or throw. They are
// never shipped; see README.md beside this file.

using System;
using System.Collections.Generic;
using System.Collections.ObjectModel;

namespace NinjaTrader.Cbi
{
	public enum AccountItem
	{
		BuyingPower, CashValue, Commission, ExcessIntradayMargin, ExcessInitialMargin, ExcessMaintenanceMargin,
		ExcessPositionMargin, Fee, GrossRealizedProfitLoss, InitialMargin, IntradayMargin, LongOptionValue,
		LookAheadMaintenanceMargin, LongStockValue, MaintenanceMargin, NetLiquidation, NetLiquidationByCurrency,
		PositionMargin, RealizedProfitLoss, ShortOptionValue, ShortStockValue, SodCashValue, SodLiquidatingValue,
		UnrealizedProfitLoss, TotalCashBalance,
	}

	public enum AccountStatus { Disabled, Enabled, Hidden }

	public enum ConnectionStatus { Connected, Connecting, ConnectionLost, Disconnecting, Disconnected }

	public enum Currency { AustralianDollar, BritishPound, CanadianDollar, Euro, HongKongDollar, JapaneseYen, NewZealandDollar, SwissFranc, UsDollar, Unknown }

	public enum ErrorCode { NoError, LogOnFailed, OrderRejected, UnableToCancelOrder, UnableToChangeOrder, UnableToSubmitOrder, Panic }

	public enum Exchange { Default, Cbot, Cme, Comex, Globex, Nybot, Nymex }

	public enum InstrumentType { CryptoCurrency, Forex, Future, Index, Option, Stock, Unknown }

	public enum MarketPosition { Flat, Long, Short }

	public enum Operation { Add, Update, Remove }

	public enum OrderAction { Buy, BuyToCover, Sell, SellShort }

	public enum OrderEntry { Automated, Manual }

	public enum OrderState
	{
		Initialized, Submitted, Accepted, TriggerPending, Working, ChangePending, ChangeSubmitted, CancelPending,
		CancelSubmitted, Cancelled, Rejected, PartFilled, Filled, Unknown,
	}

	public enum OrderType { Limit, Market, MIT, StopMarket, StopLimit }

	public enum PerformanceUnit { Currency, Percent, Pips, Points, Ticks }

	public enum Provider { Simulator, Playback, Continuum, Cqg, Rithmic, Tradovate, InteractiveBrokers, Kinetick }

	public enum TimeInForce { Day, Gtc, Gtd, Ioc, Opg }

	public class CustomOrder { }

	public class ConnectOptions
	{
		public string Name { get; set; }
	}

	public class AccountItemEventArgs : EventArgs
	{
		public Account Account { get; set; }
	}

	public class AccountStatusEventArgs : EventArgs
	{
		public Account Account { get; set; }
	}

	public class ConnectionStatusEventArgs : EventArgs
	{
		public Connection Connection { get; set; }
	}

	public class OrderEventArgs : EventArgs
	{
		public string Comment { get; set; }
		public ErrorCode Error { get; set; }
		public Order Order { get; set; }
		public OrderState OrderState { get; set; }
	}

	public class ExecutionEventArgs : EventArgs
	{
		public Execution Execution { get; set; }
		public Operation Operation { get; set; }
	}

	public class PositionEventArgs : EventArgs
	{
		public MarketPosition MarketPosition { get; set; }
		public Operation Operation { get; set; }
		public Position Position { get; set; }
		public int Quantity { get; set; }
	}

	public class Account
	{
		public static Collection<Account> All { get { throw new NotImplementedException(); } }
		public static event EventHandler<AccountStatusEventArgs> AccountStatusUpdate { add { } remove { } }

		public event EventHandler<AccountItemEventArgs> AccountItemUpdate { add { } remove { } }
		public event EventHandler<OrderEventArgs> OrderUpdate { add { } remove { } }
		public event EventHandler<ExecutionEventArgs> ExecutionUpdate { add { } remove { } }
		public event EventHandler<PositionEventArgs> PositionUpdate { add { } remove { } }

		public AccountStatus AccountStatus { get; set; }
		public Connection Connection { get; set; }
		public ConnectionStatus ConnectionStatus { get; set; }
		public Currency Denomination { get; set; }
		public string DisplayName { get; set; }
		public Collection<Execution> Executions { get; set; }
		public string Name { get; set; }
		public Collection<Order> Orders { get; set; }
		public Collection<Position> Positions { get; set; }
		public Provider Provider { get; set; }
		public Collection<NinjaTrader.NinjaScript.StrategyBase> Strategies { get; set; }

		public void Cancel(IEnumerable<Order> orders) { throw new NotImplementedException(); }
		public void Change(IEnumerable<Order> orders) { throw new NotImplementedException(); }
		public Order CreateOrder(Instrument instrument, OrderAction action, OrderType orderType, OrderEntry orderEntry,
			TimeInForce timeInForce, int quantity, double limitPrice, double stopPrice, string oco, string name, DateTime gtd,
			CustomOrder customOrder)
		{ throw new NotImplementedException(); }
		public void Flatten(ICollection<Instrument> instruments) { throw new NotImplementedException(); }
		public double Get(AccountItem itemType, Currency currency) { throw new NotImplementedException(); }
		public void Submit(IEnumerable<Order> orders) { throw new NotImplementedException(); }
	}

	public class Connection
	{
		public static Collection<Connection> Connections { get { throw new NotImplementedException(); } }
		public static event EventHandler<ConnectionStatusEventArgs> ConnectionStatusUpdate { add { } remove { } }

		public IList<Account> Accounts { get; set; }
		public ConnectOptions Options { get; set; }
		public ConnectionStatus Status { get; set; }
	}

	public class Execution
	{
		public Account Account { get; set; }
		public double Commission { get; set; }
		public string ExecutionId { get; set; }
		public Instrument Instrument { get; set; }
		public MarketPosition MarketPosition { get; set; }
		public string Name { get; set; }
		public Order Order { get; set; }
		public string OrderId { get; set; }
		public double Price { get; set; }
		public int Quantity { get; set; }
		public DateTime Time { get; set; }
	}

	public class Instrument
	{
		public static Instrument GetInstrument(string instrumentName, bool create = false) { throw new NotImplementedException(); }

		public System.Windows.Threading.Dispatcher Dispatcher { get; set; }
		public Exchange Exchange { get; set; }
		public DateTime Expiry { get; set; }
		public string FullName { get; set; }
		public NinjaTrader.Data.MarketData MarketData { get; set; }
		public MasterInstrument MasterInstrument { get; set; }
	}

	public class Rollover
	{
		public DateTime ContractMonth { get; set; }
		public DateTime Date { get; set; }
	}

	public class RolloverCollection : Collection<Rollover> { }

	public class MasterInstrument
	{
		public Currency Currency { get; set; }
		public string Description { get; set; }
		public InstrumentType InstrumentType { get; set; }
		public string Name { get; set; }
		public double PointValue { get; set; }
		public RolloverCollection RolloverCollection { get; set; }
		public double TickSize { get; set; }
		public NinjaTrader.Data.TradingHours TradingHours { get; set; }

		public DateTime GetNextExpiry(DateTime afterDate) { throw new NotImplementedException(); }
		public double RoundToTickSize(double price) { throw new NotImplementedException(); }
	}

	public class Order
	{
		public Account Account { get; set; }
		public double AverageFillPrice { get; set; }
		public int Filled { get; set; }
		public Instrument Instrument { get; set; }
		public double LimitPrice { get; set; }
		public double LimitPriceChanged { get; set; }
		public string Name { get; set; }
		public string Oco { get; set; }
		public OrderAction OrderAction { get; set; }
		public string OrderId { get; set; }
		public OrderState OrderState { get; set; }
		public OrderType OrderType { get; set; }
		public int Quantity { get; set; }
		public int QuantityChanged { get; set; }
		public double StopPrice { get; set; }
		public double StopPriceChanged { get; set; }
		public DateTime Time { get; set; }
		public TimeInForce TimeInForce { get; set; }
	}

	public class Position
	{
		public Account Account { get; set; }
		public double AveragePrice { get; set; }
		public Instrument Instrument { get; set; }
		public MarketPosition MarketPosition { get; set; }
		public int Quantity { get; set; }

		public double GetMarketPrice() { throw new NotImplementedException(); }
		public double GetUnrealizedProfitLoss(PerformanceUnit unit, double price) { throw new NotImplementedException(); }
	}
}
