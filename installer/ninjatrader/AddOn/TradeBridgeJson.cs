// TradeBridge NinjaScript add-on: a small, strict JSON reader and writer.
//
// NinjaScript add-ons compile inside NinjaTrader against a fixed set of
// assemblies, none of which is a JSON library the add-on can rely on, so the
// add-on carries its own. The reader accepts exactly RFC 8259 JSON (objects,
// arrays, strings with every escape including \u and surrogate pairs,
// numbers, true, false, null) up to a nesting depth, and refuses everything
// else (trailing commas, comments, lone surrogates, control characters,
// duplicate keys, leading zeros). Numbers are kept as their text until read,
// so integer ids never pass through a double. The writer always formats
// numbers with the invariant culture.
//
// This file uses only the .NET base library: the self-test compiles it
// outside NinjaTrader.

using System;
using System.Collections.Generic;
using System.Globalization;
using System.Text;

namespace NinjaTrader.NinjaScript.AddOns
{
	/// <summary>A JSON text that does not parse. The message names the position, never the text.</summary>
	public sealed class TradeBridgeJsonException : Exception
	{
		public TradeBridgeJsonException(string message, int position)
			: base(message + " at offset " + position.ToString(CultureInfo.InvariantCulture))
		{
			Position = position;
		}

		public int Position { get; private set; }
	}

	/// <summary>A JSON number, kept as the text it was written with.</summary>
	public sealed class TradeBridgeJsonNumber
	{
		public TradeBridgeJsonNumber(string text) { Text = text; }

		public string Text { get; private set; }

		/// <summary>True when the number is a whole number that fits a long (1.0 and 1e2 count).</summary>
		public bool TryGetInt64(out long value)
		{
			if (long.TryParse(Text, NumberStyles.AllowLeadingSign, CultureInfo.InvariantCulture, out value))
				return true;
			double d = ToDouble();
			if (Math.Floor(d) == d && d >= -9.2e18 && d <= 9.2e18)
			{
				value = (long)d;
				return true;
			}
			value = 0;
			return false;
		}

		/// <summary>True when the number is a whole, non-negative number that fits a ulong.</summary>
		public bool TryGetUInt64(out ulong value)
		{
			if (ulong.TryParse(Text, NumberStyles.None, CultureInfo.InvariantCulture, out value))
				return true;
			long l;
			if (TryGetInt64(out l) && l >= 0)
			{
				value = (ulong)l;
				return true;
			}
			value = 0;
			return false;
		}

		public double ToDouble()
		{
			return double.Parse(Text, NumberStyles.Float, CultureInfo.InvariantCulture);
		}

		public override string ToString() { return Text; }
	}

	/// <summary>
	/// Parses JSON into plain values: null, bool, string, TradeBridgeJsonNumber,
	/// List&lt;object&gt; and Dictionary&lt;string, object&gt; (ordinal keys).
	/// </summary>
	public sealed class TradeBridgeJsonReader
	{
		/// <summary>The deepest nesting of objects and arrays a document may have.</summary>
		public const int DefaultMaxDepth = 64;

		private readonly string text;
		private readonly int maxDepth;
		private int pos;

		private TradeBridgeJsonReader(string text, int maxDepth)
		{
			this.text = text;
			this.maxDepth = maxDepth;
		}

		public static object Parse(string text)
		{
			return Parse(text, DefaultMaxDepth);
		}

		public static object Parse(string text, int maxDepth)
		{
			if (text == null)
				throw new ArgumentNullException("text");
			TradeBridgeJsonReader r = new TradeBridgeJsonReader(text, maxDepth);
			r.SkipSpace();
			object v = r.ReadValue(0);
			r.SkipSpace();
			if (r.pos != text.Length)
				throw new TradeBridgeJsonException("unexpected text after the value", r.pos);
			return v;
		}

		private void SkipSpace()
		{
			while (pos < text.Length)
			{
				char c = text[pos];
				if (c == ' ' || c == '\t' || c == '\n' || c == '\r')
					pos++;
				else
					break;
			}
		}

		private object ReadValue(int depth)
		{
			if (pos >= text.Length)
				throw new TradeBridgeJsonException("unexpected end of text", pos);
			char c = text[pos];
			switch (c)
			{
				case '{':
					return ReadObject(depth + 1);
				case '[':
					return ReadArray(depth + 1);
				case '"':
					return ReadString();
				case 't':
					ReadLiteral("true");
					return true;
				case 'f':
					ReadLiteral("false");
					return false;
				case 'n':
					ReadLiteral("null");
					return null;
				default:
					if (c == '-' || (c >= '0' && c <= '9'))
						return ReadNumber();
					throw new TradeBridgeJsonException("unexpected character", pos);
			}
		}

		private void ReadLiteral(string literal)
		{
			if (string.CompareOrdinal(text, pos, literal, 0, literal.Length) != 0)
				throw new TradeBridgeJsonException("invalid literal", pos);
			pos += literal.Length;
		}

		private Dictionary<string, object> ReadObject(int depth)
		{
			if (depth > maxDepth)
				throw new TradeBridgeJsonException("nesting too deep", pos);
			pos++; // {
			Dictionary<string, object> obj = new Dictionary<string, object>(StringComparer.Ordinal);
			SkipSpace();
			if (pos < text.Length && text[pos] == '}')
			{
				pos++;
				return obj;
			}
			while (true)
			{
				SkipSpace();
				if (pos >= text.Length || text[pos] != '"')
					throw new TradeBridgeJsonException("expected a key", pos);
				int keyAt = pos;
				string key = ReadString();
				SkipSpace();
				if (pos >= text.Length || text[pos] != ':')
					throw new TradeBridgeJsonException("expected ':'", pos);
				pos++;
				SkipSpace();
				object v = ReadValue(depth);
				if (obj.ContainsKey(key))
					throw new TradeBridgeJsonException("duplicate key", keyAt);
				obj.Add(key, v);
				SkipSpace();
				if (pos >= text.Length)
					throw new TradeBridgeJsonException("unexpected end of text", pos);
				if (text[pos] == ',')
				{
					pos++;
					continue;
				}
				if (text[pos] == '}')
				{
					pos++;
					return obj;
				}
				throw new TradeBridgeJsonException("expected ',' or '}'", pos);
			}
		}

		private List<object> ReadArray(int depth)
		{
			if (depth > maxDepth)
				throw new TradeBridgeJsonException("nesting too deep", pos);
			pos++; // [
			List<object> list = new List<object>();
			SkipSpace();
			if (pos < text.Length && text[pos] == ']')
			{
				pos++;
				return list;
			}
			while (true)
			{
				SkipSpace();
				list.Add(ReadValue(depth));
				SkipSpace();
				if (pos >= text.Length)
					throw new TradeBridgeJsonException("unexpected end of text", pos);
				if (text[pos] == ',')
				{
					pos++;
					continue;
				}
				if (text[pos] == ']')
				{
					pos++;
					return list;
				}
				throw new TradeBridgeJsonException("expected ',' or ']'", pos);
			}
		}

		private string ReadString()
		{
			pos++; // opening quote
			StringBuilder sb = null;
			int runStart = pos;
			while (true)
			{
				if (pos >= text.Length)
					throw new TradeBridgeJsonException("unterminated string", pos);
				char c = text[pos];
				if (c == '"')
				{
					string s;
					if (sb == null)
						s = text.Substring(runStart, pos - runStart);
					else
					{
						sb.Append(text, runStart, pos - runStart);
						s = sb.ToString();
					}
					pos++;
					return s;
				}
				if (c < 0x20)
					throw new TradeBridgeJsonException("control character in string", pos);
				if (char.IsSurrogate(c))
				{
					// A raw surrogate must be a well-formed pair.
					if (!char.IsHighSurrogate(c) || pos + 1 >= text.Length || !char.IsLowSurrogate(text[pos + 1]))
						throw new TradeBridgeJsonException("invalid surrogate in string", pos);
					pos += 2;
					continue;
				}
				if (c != '\\')
				{
					pos++;
					continue;
				}
				if (sb == null)
					sb = new StringBuilder();
				sb.Append(text, runStart, pos - runStart);
				pos++;
				if (pos >= text.Length)
					throw new TradeBridgeJsonException("unterminated escape", pos);
				char e = text[pos];
				switch (e)
				{
					case '"': sb.Append('"'); pos++; break;
					case '\\': sb.Append('\\'); pos++; break;
					case '/': sb.Append('/'); pos++; break;
					case 'b': sb.Append('\b'); pos++; break;
					case 'f': sb.Append('\f'); pos++; break;
					case 'n': sb.Append('\n'); pos++; break;
					case 'r': sb.Append('\r'); pos++; break;
					case 't': sb.Append('\t'); pos++; break;
					case 'u':
						{
							int at = pos - 1;
							pos++;
							char u = ReadHex4();
							if (char.IsHighSurrogate(u))
							{
								if (pos + 1 < text.Length && text[pos] == '\\' && text[pos + 1] == 'u')
								{
									pos += 2;
									char low = ReadHex4();
									if (!char.IsLowSurrogate(low))
										throw new TradeBridgeJsonException("invalid surrogate pair", at);
									sb.Append(u);
									sb.Append(low);
								}
								else
									throw new TradeBridgeJsonException("lone surrogate", at);
							}
							else if (char.IsLowSurrogate(u))
								throw new TradeBridgeJsonException("lone surrogate", at);
							else
								sb.Append(u);
							break;
						}
					default:
						throw new TradeBridgeJsonException("invalid escape", pos - 1);
				}
				runStart = pos;
			}
		}

		private char ReadHex4()
		{
			if (pos + 4 > text.Length)
				throw new TradeBridgeJsonException("short \\u escape", pos);
			int v = 0;
			for (int i = 0; i < 4; i++)
			{
				char h = text[pos + i];
				int d;
				if (h >= '0' && h <= '9') d = h - '0';
				else if (h >= 'a' && h <= 'f') d = h - 'a' + 10;
				else if (h >= 'A' && h <= 'F') d = h - 'A' + 10;
				else throw new TradeBridgeJsonException("invalid \\u escape", pos + i);
				v = v * 16 + d;
			}
			pos += 4;
			return (char)v;
		}

		private TradeBridgeJsonNumber ReadNumber()
		{
			int start = pos;
			if (text[pos] == '-')
				pos++;
			if (pos >= text.Length)
				throw new TradeBridgeJsonException("invalid number", start);
			if (text[pos] == '0')
			{
				pos++;
				if (pos < text.Length && text[pos] >= '0' && text[pos] <= '9')
					throw new TradeBridgeJsonException("leading zero in number", start);
			}
			else if (text[pos] >= '1' && text[pos] <= '9')
			{
				while (pos < text.Length && text[pos] >= '0' && text[pos] <= '9')
					pos++;
			}
			else
				throw new TradeBridgeJsonException("invalid number", start);
			if (pos < text.Length && text[pos] == '.')
			{
				pos++;
				int digits = pos;
				while (pos < text.Length && text[pos] >= '0' && text[pos] <= '9')
					pos++;
				if (pos == digits)
					throw new TradeBridgeJsonException("invalid number", start);
			}
			if (pos < text.Length && (text[pos] == 'e' || text[pos] == 'E'))
			{
				pos++;
				if (pos < text.Length && (text[pos] == '+' || text[pos] == '-'))
					pos++;
				int digits = pos;
				while (pos < text.Length && text[pos] >= '0' && text[pos] <= '9')
					pos++;
				if (pos == digits)
					throw new TradeBridgeJsonException("invalid number", start);
			}
			string s = text.Substring(start, pos - start);
			double d;
			if (!double.TryParse(s, NumberStyles.Float, CultureInfo.InvariantCulture, out d) || double.IsInfinity(d))
				throw new TradeBridgeJsonException("number out of range", start);
			return new TradeBridgeJsonNumber(s);
		}
	}

	/// <summary>
	/// Writes one JSON value into a StringBuilder. Commas between members and
	/// elements are added by the writer; Key must precede each member's value.
	/// </summary>
	public sealed class TradeBridgeJsonWriter
	{
		private readonly StringBuilder sb;
		// For each open container: whether it already has a member/element.
		private readonly Stack<bool> open = new Stack<bool>();
		private bool afterKey;

		public TradeBridgeJsonWriter() : this(new StringBuilder()) { }

		public TradeBridgeJsonWriter(StringBuilder sb) { this.sb = sb; }

		public override string ToString() { return sb.ToString(); }

		private void BeforeValue()
		{
			if (afterKey)
			{
				afterKey = false;
				return;
			}
			if (open.Count > 0)
			{
				if (open.Peek())
					sb.Append(',');
				else
				{
					open.Pop();
					open.Push(true);
				}
			}
		}

		public TradeBridgeJsonWriter BeginObject()
		{
			BeforeValue();
			sb.Append('{');
			open.Push(false);
			return this;
		}

		public TradeBridgeJsonWriter EndObject()
		{
			open.Pop();
			sb.Append('}');
			return this;
		}

		public TradeBridgeJsonWriter BeginArray()
		{
			BeforeValue();
			sb.Append('[');
			open.Push(false);
			return this;
		}

		public TradeBridgeJsonWriter EndArray()
		{
			open.Pop();
			sb.Append(']');
			return this;
		}

		public TradeBridgeJsonWriter Key(string name)
		{
			BeforeValue();
			AppendString(sb, name);
			sb.Append(':');
			afterKey = true;
			return this;
		}

		public TradeBridgeJsonWriter String(string value)
		{
			BeforeValue();
			if (value == null)
				sb.Append("null");
			else
				AppendString(sb, value);
			return this;
		}

		/// <summary>Writes a double; NaN and infinities, which JSON cannot hold, are written as null.</summary>
		public TradeBridgeJsonWriter Number(double value)
		{
			BeforeValue();
			if (double.IsNaN(value) || double.IsInfinity(value))
				sb.Append("null");
			else
				sb.Append(value.ToString("R", CultureInfo.InvariantCulture));
			return this;
		}

		public TradeBridgeJsonWriter Number(long value)
		{
			BeforeValue();
			sb.Append(value.ToString(CultureInfo.InvariantCulture));
			return this;
		}

		public TradeBridgeJsonWriter Number(ulong value)
		{
			BeforeValue();
			sb.Append(value.ToString(CultureInfo.InvariantCulture));
			return this;
		}

		public TradeBridgeJsonWriter Bool(bool value)
		{
			BeforeValue();
			sb.Append(value ? "true" : "false");
			return this;
		}

		public TradeBridgeJsonWriter Null()
		{
			BeforeValue();
			sb.Append("null");
			return this;
		}

		/// <summary>Writes text that is already one JSON value, as is.</summary>
		public TradeBridgeJsonWriter Raw(string json)
		{
			BeforeValue();
			sb.Append(json);
			return this;
		}

		// Shorthands for object members.
		public TradeBridgeJsonWriter Prop(string name, string value) { return Key(name).String(value); }
		public TradeBridgeJsonWriter Prop(string name, double value) { return Key(name).Number(value); }
		public TradeBridgeJsonWriter Prop(string name, long value) { return Key(name).Number(value); }
		public TradeBridgeJsonWriter Prop(string name, int value) { return Key(name).Number((long)value); }
		public TradeBridgeJsonWriter Prop(string name, ulong value) { return Key(name).Number(value); }
		public TradeBridgeJsonWriter Prop(string name, bool value) { return Key(name).Bool(value); }

		/// <summary>Writes a member only when value is neither null nor empty.</summary>
		public TradeBridgeJsonWriter PropIf(string name, string value)
		{
			if (!string.IsNullOrEmpty(value))
				Key(name).String(value);
			return this;
		}

		/// <summary>Writes a value of the reader's model (and ints, longs, doubles, string lists).</summary>
		public TradeBridgeJsonWriter Value(object v)
		{
			if (v == null) return Null();
			string s = v as string;
			if (s != null) return String(s);
			if (v is bool) return Bool((bool)v);
			TradeBridgeJsonNumber n = v as TradeBridgeJsonNumber;
			if (n != null) return Raw(n.Text);
			if (v is int) return Number((long)(int)v);
			if (v is long) return Number((long)v);
			if (v is ulong) return Number((ulong)v);
			if (v is double) return Number((double)v);
			IDictionary<string, object> d = v as IDictionary<string, object>;
			if (d != null)
			{
				BeginObject();
				foreach (KeyValuePair<string, object> kv in d)
				{
					Key(kv.Key);
					Value(kv.Value);
				}
				return EndObject();
			}
			System.Collections.IEnumerable e = v as System.Collections.IEnumerable;
			if (e != null)
			{
				BeginArray();
				foreach (object o in e)
					Value(o);
				return EndArray();
			}
			throw new ArgumentException("value of a type JSON cannot hold");
		}

		/// <summary>Appends s as a JSON string: quotes, backslashes and control characters escaped.</summary>
		public static void AppendString(StringBuilder sb, string s)
		{
			sb.Append('"');
			int run = 0;
			for (int i = 0; i < s.Length; i++)
			{
				char c = s[i];
				string esc = null;
				switch (c)
				{
					case '"': esc = "\\\""; break;
					case '\\': esc = "\\\\"; break;
					case '\n': esc = "\\n"; break;
					case '\r': esc = "\\r"; break;
					case '\t': esc = "\\t"; break;
					case '\b': esc = "\\b"; break;
					case '\f': esc = "\\f"; break;
					default:
						if (c < 0x20 || c == '\u2028' || c == '\u2029')
							esc = "\\u" + ((int)c).ToString("x4", CultureInfo.InvariantCulture);
						else if (char.IsSurrogate(c))
						{
							// Keep well-formed pairs; a lone surrogate cannot be UTF-8 and becomes U+FFFD.
							if (char.IsHighSurrogate(c) && i + 1 < s.Length && char.IsLowSurrogate(s[i + 1]))
							{
								i++;
								continue;
							}
							esc = "\ufffd";
						}
						break;
				}
				if (esc != null)
				{
					sb.Append(s, run, i - run);
					sb.Append(esc);
					run = i + 1;
				}
			}
			sb.Append(s, run, s.Length - run);
			sb.Append('"');
		}
	}
}
